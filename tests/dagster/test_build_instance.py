"""The instance Synix's own processes open (`dagster_instance`, from synix-build.yaml): the
project's dagster.yaml with Dagster's compute-log capture off, so a `synix run` starts no `tail`
or watcher process per step; the UI's instance (dagster.yaml) keeps capturing, and a
dagster.yaml that configures compute logs itself is used as it is."""
from __future__ import annotations

import subprocess

import dagster as dg
import pytest

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.instance_files import BUILD_YAML


@pytest.fixture
def started(monkeypatch) -> list[list[str]]:
    """The command lines of every process started meanwhile (Dagster's capture starts `tail`)."""
    seen: list[list[str]] = []
    real = subprocess.Popen.__init__

    def spy(self, args, *rest, **kwargs):
        seen.append([str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)])
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    return seen


def _tails(started: list[list[str]]) -> int:
    return sum(1 for argv in started if argv and argv[0].endswith("tail"))


def test_a_build_records_its_runs_without_capturing_their_logs_and_the_ui_instance_still_captures(
        demo_project, started):
    report = run_build(demo_project)
    assert report.status == "completed" and report.dagster_runs
    home = demo_project.dagster_home
    build_yaml = (home / BUILD_YAML).read_text(encoding="utf-8")
    assert build_yaml.startswith((home / "dagster.yaml").read_text(encoding="utf-8").rstrip("\n"))
    with dagster_instance(demo_project) as instance:
        assert type(instance.compute_log_manager).__name__ == "NoOpComputeLogManager"
        # every run of the build is recorded, with its materializations, and no step's output
        # was captured through a `tail` process
        assert {r.run_id for r in instance.get_runs()} >= set(report.dagster_runs)
        assert instance.get_latest_materialization_event(dg.AssetKey("episodes")) is not None
    assert _tails(started) == 0
    with dg.DagsterInstance.from_config(str(home)) as ui:  # what `dagster dev` opens
        assert type(ui.compute_log_manager).__name__ == "LocalComputeLogManager"


def test_a_dagster_yaml_that_configures_compute_logs_is_used_as_it_is(demo_project, tmp_path, started):
    run_build(demo_project)
    home = demo_project.dagster_home
    logs = tmp_path / "logs"
    with open(home / "dagster.yaml", "a", encoding="utf-8") as f:
        f.write(f"compute_logs:\n  module: dagster._core.storage.local_compute_log_manager\n"
                f"  class: LocalComputeLogManager\n"
                f"  config:\n    base_dir: {logs}\n")
    with dagster_instance(demo_project) as instance:
        assert type(instance.compute_log_manager).__name__ == "LocalComputeLogManager"
    before = _tails(started)
    run_build(demo_project, full=True)
    assert _tails(started) > before  # the project's own choice: its runs capture
