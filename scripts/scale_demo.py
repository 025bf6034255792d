"""A distributed Synix build on this machine, loopback only, set up and torn down by PID.

    scripts/scale_demo.sh WORKERS CONVERSATIONS      (this module does the work)

Starts PostgreSQL (Synix's store, cache and lock; Dagster's run/event/schedule storage) and
Redis (the Celery broker, its result backend and the shared LLM rate limit) in tmp dirs, a
project over generated conversations
(benchmarks/generate_exports.py) with a scale.toml, Dagster's gRPC code server, webserver and
daemon (QueuedRunCoordinator) on that storage, and WORKERS Celery workers
(synix_assets.scale.worker). `synix run` then submits every layer's runs to the deployment with
the fake LLM at 300 ms. The same exports are built once more on one machine (in process, plain
SQLite) and the two stores' artifacts compared by content hash. Prints one JSON line last:
{"workers", "workers_used", "wall_s", "calls", "max_requests_per_s",
 "artifacts_match_single_machine", ...}.

The project's store, LLM cache and build lock are in PostgreSQL too (`synix init --store`), so
nothing the workers share is a file.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PIP_SCALE = 'pip install -e ".[scale]"'
# (what is needed, how to find it, the install line) — Python packages the `scale` extra brings
PYTHON_PREREQUISITES = (("psycopg", "psycopg"), ("dagster-postgres", "dagster_postgres"),
                        ("dagster-celery", "dagster_celery"), ("redis (Python client)", "redis"))


def missing_prerequisites() -> list[str]:
    """What this demo needs and this machine lacks, each with its install line: Debian's
    redis-server and PostgreSQL server binaries, and the `scale` extra's Python packages.
    Checked before anything starts (or is imported), so a missing piece is one line, not a
    traceback minutes in."""
    import importlib.util

    from tests.support.postgres import PostgresUnavailable, find_bin_dir

    missing = []
    if shutil.which("redis-server") is None:
        missing.append("redis-server (apt-get install redis-server)")
    try:
        find_bin_dir()
    except PostgresUnavailable:
        missing.append("PostgreSQL's initdb and postgres (apt-get install postgresql, "
                       "or set SYNIX_PG_BIN to their directory)")
    absent = [name for name, module in PYTHON_PREREQUISITES if importlib.util.find_spec(module) is None]
    if absent:
        missing.append(f"{', '.join(absent)} ({PIP_SCALE})")
    return missing


if __name__ == "__main__":
    _missing = missing_prerequisites()
    if _missing:
        print(f"scale_demo: missing {'; '.join(_missing)}", file=sys.stderr)
        sys.exit(2)

from synix_assets.project import ProjectPaths  # noqa: E402
from synix_assets.app.init import init_project  # noqa: E402
from synix_assets.scale.worker import worker_argv, worker_env  # noqa: E402
from synix_assets.web.process_tree import start_group, stop_group  # noqa: E402
from synix_resources.llm import shared_limit  # noqa: E402
from tests.support.postgres import free_port, start_postgres  # noqa: E402
from tests.support.redis_server import start_redis  # noqa: E402

READY_TIMEOUT_S = 180.0
BUILD_TIMEOUT_S = 3600.0

# The run queue of the deployment, added to the dagster.yaml `synix init --dagster-storage` writes.
RUN_COORDINATOR = """
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    max_concurrent_runs: {max_runs}
    # launch queued runs in parallel: starting a run process takes seconds
    dequeue_use_threads: true
    dequeue_num_workers: {max_runs}
    dequeue_interval_seconds: 1
"""

SCALE_TOML = """# Distributed builds of this project (docs/scale.md)
[dagster]
webserver = "http://127.0.0.1:{web_port}"
location = "synix"
run_timeout_s = {run_timeout}
exports_sensor = false

[celery]
broker = "{broker}"
backend = "{backend}"
partitions_per_run = {per_run}
visibility_timeout_s = {visibility}
"""

WORKSPACE_YAML = """load_from:
  - grpc_server:
      host: 127.0.0.1
      port: {port}
      location_name: synix
"""


def _bin(name: str) -> str:
    """A console script of this interpreter's environment (the venv need not be on PATH)."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def _wait(what: str, ready, timeout_s: float = READY_TIMEOUT_S, procs=()) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{what}: a process exited with {proc.returncode} while starting")
        if ready():
            return
        time.sleep(0.3)
    raise RuntimeError(f"{what} not ready within {timeout_s:.0f}s")


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False


def generate_exports(out: Path, conversations: int, months: int = 12) -> Path:
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "generate_exports.py"), "--n",
                    str(conversations), "--months", str(months), "--format", "chatgpt", "--out",
                    str(out)], check=True, capture_output=True, timeout=300)
    return out


@dataclass
class Deployment:
    """Everything of one distributed build environment; `stop()` ends it all by PID."""
    base: Path
    workers: int
    export: Path
    latency_s: float = 0.3
    max_requests_per_s: int = 30
    concurrency: int = 4  # requests in flight per worker
    partitions_per_run: int = 100
    visibility_timeout_s: int = 120
    run_timeout_s: float = BUILD_TIMEOUT_S  # how long `synix run` waits for one layer's runs
    worker_loglevel: str = "WARNING"  # INFO logs every task a worker receives and finishes
    postgres: object = None
    redis: object = None
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    logs: list = field(default_factory=list)

    @property
    def project(self) -> ProjectPaths:
        return ProjectPaths(self.base / "mem")

    @property
    def limit_url(self) -> str:
        return self.redis.url(2)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_")}
        env.update({"PYTHONPATH": str(REPO), "DAGSTER_HOME": str(self.project.dagster_home),
                    "SYNIX_LLM_PROVIDER": "fake", "SYNIX_FAKE_LATENCY_S": str(self.latency_s),
                    "SYNIX_LLM_CONCURRENCY": str(self.concurrency),
                    "SYNIX_LLM_SHARED_LIMIT_URL": self.limit_url,
                    "SYNIX_LLM_MAX_REQUESTS_PER_S": str(self.max_requests_per_s)})
        return env

    def start(self) -> "Deployment":
        self.postgres = start_postgres()
        self.redis = start_redis()
        # Synix's store, LLM cache and build lock in one database, Dagster's storage in another
        root = init_project(self.base / "mem", exports=[self.export],
                            store=self.postgres.create_database("synix"),
                            dagster_storage=self.postgres.create_database("dagster"))
        with open(self.project.dagster_home / "dagster.yaml", "a", encoding="utf-8") as f:
            f.write(RUN_COORDINATOR.format(max_runs=self.workers + 2))
        code_port, web_port = free_port(), free_port()
        (root / "scale.toml").write_text(SCALE_TOML.format(
            web_port=web_port, run_timeout=int(self.run_timeout_s), broker=self.redis.url(0),
            backend=self.redis.url(1), per_run=self.partitions_per_run,
            visibility=self.visibility_timeout_s), encoding="utf-8")
        (root / "workspace.yaml").write_text(WORKSPACE_YAML.format(port=code_port), encoding="utf-8")
        shared_limit.reset(self.limit_url)
        env = self.env()
        self._start("code-server", [_bin("dagster"), "api", "grpc", "-h", "127.0.0.1", "-p", str(code_port),
                                    "-f", str(root / "definitions.py"), "-d", str(root)], env)
        _wait("code server", lambda: _port_open(code_port), procs=self.procs.values())
        self._start("webserver", [_bin("dagster-webserver"), "-h", "127.0.0.1", "-p", str(web_port),
                                  "-w", str(root / "workspace.yaml")], env)
        self._start("daemon", [_bin("dagster-daemon"), "run", "-w", str(root / "workspace.yaml")], env)
        for n in range(1, self.workers + 1):
            name = f"w{n}"
            self._start(name, worker_argv(name, self.worker_loglevel), worker_env(self.project, name, env))
        _wait("webserver", lambda: _http_ok(f"http://127.0.0.1:{web_port}/server_info"),
              procs=self.procs.values())
        return self

    def _start(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        log = open(self.base / f"{name}.log", "ab")
        self.logs.append(log)
        self.procs[name] = start_group(argv, env=env, cwd=self.project.root, stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def worker_pid(self, name: str) -> int:
        return self.procs[name].pid

    def kill_worker(self, name: str) -> None:
        """SIGKILL one worker process, as a machine going down would."""
        os.kill(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait(timeout=30)

    def build(self, timeout_s: float = BUILD_TIMEOUT_S) -> subprocess.Popen:
        """Start `synix run --json` against the deployment (the coordinator)."""
        out = open(self.base / "synix-run.json", "wb")
        err = open(self.base / "synix-run.err", "wb")
        self.logs += [out, err]
        self.procs["synix-run"] = start_group(
            [sys.executable, "-m", "synix_assets.cli", "run", "-p", str(self.project.root), "--json"],
            env=self.env(), cwd=self.base, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        return self.procs["synix-run"]

    def diagnostics(self, lines: int = 15) -> str:
        """The end of every log of the deployment: what a failed or stuck build is read from."""
        out = []
        for log in sorted(self.base.glob("*.log")) + sorted(self.base.glob("synix-run.err")):
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(tail))
        return "\n".join(out)

    def report(self) -> dict:
        text = (self.base / "synix-run.json").read_text(encoding="utf-8").strip()
        return json.loads(text) if text else {}

    def stop(self) -> None:
        """Every process by PID, newest first; one that fails to stop does not keep the others
        running (the first error is raised at the end)."""
        stops = [(name, lambda p=proc: stop_group(p, grace_s=20))
                 for name, proc in reversed(list(self.procs.items()))]
        stops += [(name, server.stop) for name, server in (("redis", self.redis),
                                                           ("postgres", self.postgres)) if server]
        first = None
        for name, stop in stops:
            try:
                stop()
            except BaseException as exc:  # noqa: BLE001 — re-raised below, after the rest stopped
                print(f"scale_demo: stopping {name} failed: {exc!r}", file=sys.stderr)
                first = first or exc
        for log in self.logs:
            log.close()
        if first is not None:
            raise first


def single_machine_build(base: Path, export: Path) -> Path:
    """The same exports built in one process on plain SQLite (latency does not change answers)."""
    root = init_project(base / "single", exports=[export])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_")}
    env.update({"PYTHONPATH": str(REPO), "SYNIX_LLM_PROVIDER": "fake",
                "DAGSTER_HOME": str(ProjectPaths(root).dagster_home)})
    subprocess.run([sys.executable, "-m", "synix_assets.cli", "run", "-p", str(root), "--json"],
                   env=env, cwd=base, check=True, capture_output=True, timeout=BUILD_TIMEOUT_S)
    return root


def artifacts(paths: ProjectPaths) -> dict:
    """layer → {group key: content hash} of current artifacts, plus every artifact row (to find
    duplicates) and the worker each was built on."""
    store = paths.open_store()
    try:
        pipeline = paths.load_pipeline()
        current, rows, workers = {}, {}, {}
        for layer in pipeline.layer_order():
            arts = store.list_layer(layer, include_superseded=True)
            rows[layer] = len(arts)
            live = [a for a in arts if a.superseded_at is None]
            current[layer] = {a.group_key: a.content_hash for a in live}
            for a in live:
                worker = (a.audit or {}).get("worker")
                if worker:
                    workers[worker] = workers.get(worker, 0) + 1
        return {"current": current, "rows": rows, "workers": workers}
    finally:
        store.close()


def summary(dep: Deployment, wall_s: float, reference: dict | None) -> dict:
    got = artifacts(dep.project)
    stamps = shared_limit.request_stamps(dep.limit_url)
    span = (max(stamps) - min(stamps)) if len(stamps) > 1 else 0.0
    return {"workers": dep.workers, "workers_used": len(got["workers"]),
            "wall_s": round(wall_s, 1), "calls": len(stamps),
            "max_requests_per_s": shared_limit.max_per_second(stamps),
            "artifacts_match_single_machine": reference is not None and got["current"] == reference["current"],
            "rate_limit_per_s": dep.max_requests_per_s,
            "calls_per_s": round(len(stamps) / span, 1) if span else 0.0,
            "partitions_by_worker": dict(sorted(got["workers"].items())),
            "duplicate_artifacts": sum(got["rows"].values()) - sum(len(v) for v in got["current"].values()),
            "artifacts": {k: len(v) for k, v in got["current"].items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workers", type=int)
    parser.add_argument("conversations", type=int)
    parser.add_argument("--rate", type=int, default=30, help="shared LLM limit, requests/s")
    parser.add_argument("--per-run", type=int, default=100, help="partitions per run")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight per worker")
    parser.add_argument("--keep", action="store_true", help="keep the tmp dir (logs)")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="synix-scale-"))
    status = 1
    dep = Deployment(base, args.workers, generate_exports(base / "conversations.json", args.conversations),
                     max_requests_per_s=args.rate, partitions_per_run=args.per_run,
                     concurrency=args.concurrency)
    try:
        dep.start()
        started = time.monotonic()
        proc = dep.build()
        try:
            proc.wait(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            raise RuntimeError(f"the build did not finish within {BUILD_TIMEOUT_S:.0f}s")
        wall = time.monotonic() - started
        if proc.returncode != 0:
            raise RuntimeError(f"synix run exited {proc.returncode}: "
                               f"{(base / 'synix-run.err').read_text(errors='replace')[-2000:]}")
        reference = artifacts(ProjectPaths(single_machine_build(base, dep.export)))
        result = summary(dep, wall, reference)
        status = 0 if result["artifacts_match_single_machine"] else 1
    except Exception as exc:  # the environment is torn down either way; the line says why
        result = {"workers": args.workers, "error": f"{type(exc).__name__}: {exc}"[:3000],
                  "logs": str(base)}
        args.keep = True
    finally:
        dep.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    result["conversations"] = args.conversations
    print(json.dumps(result), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
