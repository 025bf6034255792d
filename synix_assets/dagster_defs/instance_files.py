"""The files that make a project folder a Dagster home: `dagster.yaml` (Synix's event log
storage, the run queue) and the project's `.env` pointing `dagster` commands at it.

Kept apart from storage.py (which tunes the connections and imports SQLAlchemy) so that
`synix init` and every command that merely reaches these names never pay for that import.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

_SYNIX_EVENT_LOG = """telemetry:
  enabled: false
# One SQLite event log for all runs (event_log.db): Dagster's consolidated SQLite event log, in
# Synix's subclass that keeps its connections and writes an event (or a batch) in one transaction
# (synix_assets/dagster_defs/event_log.py; docs/dagster.md).
event_log_storage:
  module: synix_assets.dagster_defs.event_log
  class: SynixSqliteEventLogStorage
  config:
    base_dir:
      env: DAGSTER_HOME
"""
_HEADER = "# Dagster instance settings for a Synix project (DAGSTER_HOME = <project>/.synix/dagster).\n"
INSTANCE_YAML = _HEADER + _SYNIX_EVENT_LOG + """# Dagster's default run queue, polled every second instead of every 5: a run the export sensor
# requests starts within a second (docs/dagster.md, "From export to memory").
run_coordinator:
  module: dagster
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""

# What earlier Synix versions wrote: a project's dagster.yaml still reading exactly so was never
# edited by hand and is upgraded in place (same event_log.db, same schema).
_DAGSTER_EVENT_LOG = """event_log_storage:
  module: dagster._core.storage.event_log
  class: ConsolidatedSqliteEventLogStorage
  config:
    base_dir:
      env: DAGSTER_HOME
"""
_HEAD = """# Dagster instance settings for a Synix project (DAGSTER_HOME = <project>/.synix/dagster).
telemetry:
  enabled: false
# One SQLite event log for all runs: far cheaper per event than a database shard per run.
"""
EARLIER_INSTANCE_YAMLS = (
    _HEADER + _SYNIX_EVENT_LOG,  # before the run queue's dequeue interval
    _HEAD + _DAGSTER_EVENT_LOG,
    _HEAD + """# Dagster gives this class no public module path (its own defaults name every SQLite storage by
# its `dagster._core.storage…` path, and `storage: sqlite:` selects the per-run shards), so the
# class is named where Dagster defines it; see docs/dagster.md.
""" + _DAGSTER_EVENT_LOG,
)


# The instance Synix opens in its own processes (`synix run`, forget, the live worker) reads this
# file: dagster.yaml plus no compute-log capture. Capturing a step's stdout and stderr starts a
# `tail` and a Python watcher process per stream per step (16 processes for a build's four runs,
# 0.3 s of a 2.6 s +10 build, docs/benchmarks.md session 16); these runs print to the terminal
# that started them. Runs the UI, the daemon or a sensor launches read dagster.yaml and keep it.
BUILD_YAML = "synix-build.yaml"
_NO_CAPTURE = """
# Written by Synix from dagster.yaml (edit that file, not this one): the instance of Synix's own
# processes, whose in-process runs print to the terminal instead of Dagster's compute logs.
# Dagster's documented NoOpComputeLogManager, named where Dagster defines it.
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""


def write_build_yaml(dagster_home: Path) -> str:
    """The config file Synix's own instance is opened with (in `dagster_home`): BUILD_YAML, or
    dagster.yaml itself when it configures compute logs (a choice of the project's)."""
    text = (dagster_home / "dagster.yaml").read_text(encoding="utf-8")
    if re.search(r"(?m)^compute_logs\s*:", text):
        return "dagster.yaml"
    wanted = text.rstrip("\n") + "\n" + _NO_CAPTURE
    target = dagster_home / BUILD_YAML
    if not target.exists() or target.read_text(encoding="utf-8") != wanted:
        tmp = target.with_name(f".{BUILD_YAML}.{os.getpid()}")
        tmp.write_text(wanted, encoding="utf-8")
        os.replace(tmp, target)  # another build opening it meanwhile reads the old or the new file
    return BUILD_YAML


def write_dotenv(project_root: Path, dagster_home: Path) -> None:
    """`dagster` commands run in the project folder read `.env` before creating their instance, so
    `dagster dev`, `dagster asset materialize` and `dagster job execute` there use the project's own
    Dagster home with no environment variable set. Rewritten when the project moved."""
    env = Path(project_root) / ".env"
    line = f"DAGSTER_HOME={Path(dagster_home).resolve()}"
    lines = env.read_text(encoding="utf-8").splitlines() if env.exists() else []
    if line in lines:
        return
    kept = [l for l in lines if not l.startswith("DAGSTER_HOME=")]
    env.write_text("\n".join([*kept, line]) + "\n", encoding="utf-8")


def write_instance_yaml(dagster_home: Path) -> None:
    dagster_home.mkdir(parents=True, exist_ok=True)
    cfg = dagster_home / "dagster.yaml"
    if not cfg.exists() or cfg.read_text(encoding="utf-8") in EARLIER_INSTANCE_YAMLS:
        tmp = cfg.with_name(f".dagster.yaml.{os.getpid()}")
        tmp.write_text(INSTANCE_YAML, encoding="utf-8")
        os.replace(tmp, cfg)  # a `dagster dev` reading it meanwhile sees the old or the new file
