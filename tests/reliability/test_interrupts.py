"""Signals to a real `synix run` process: Ctrl-C, SIGTERM and kill -9 in the middle of a layer.

A stopped build must say so (exit 130 / 143, "interrupted — rerun `synix run` to resume"), build
nothing downstream from the partial layer, be recorded as interrupted (in `synix runs` and in
Dagster), and leave `synix status`/`plan` agreeing with the next `synix run`, which builds exactly
what is left and exits 0; the run after that is a no-op.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from synix_resources.store.artifact_store import ArtifactStore

PY = sys.executable
MESSAGE = "interrupted — rerun `synix run` to resume"
N = 24  # conversations in the demo exports
MONTHS = 6


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env.update({"SYNIX_LLM_PROVIDER": "fake", **extra})
    return env


def _cli(paths, *args, **env):
    return subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=_env(**env), capture_output=True, text=True, timeout=300)


def _start_build(paths, latency: float) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run"],
                            env=_env(SYNIX_FAKE_LATENCY_S=str(latency)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _counts(paths) -> dict[str, int]:
    if not paths.store.exists():
        return {}
    store = ArtifactStore(paths.store)
    try:
        return {layer: v["artifacts"] for layer, v in store.layers().items()}
    finally:
        store.close()


def _wait_until(proc, condition, what: str, limit_s: float = 180) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert proc.poll() is None, f"the build ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _dagster_runs(paths, with_outcome: bool = False):
    """(status name, synix run id, steps it started[, synix/outcome tag]) of every Dagster run."""
    from synix_assets.dagster_defs.instance import dagster_instance

    instance = dagster_instance(paths)
    return [(r.status.name, r.tags.get("synix/run_id"),
             {e.step_key for e in instance.all_logs(r.run_id) if e.step_key},
             *((r.tags.get("synix/outcome"),) if with_outcome else ()))
            for r in instance.get_runs()]


def _stale(paths, command: str) -> dict[str, int]:
    out = _cli(paths, command, "--json")
    assert out.returncode == 0, out.stderr
    return {layer: v["stale"] for layer, v in json.loads(out.stdout)["layers"].items()}


def _check_resume(paths, before: dict[str, int]) -> dict:
    """status and plan agree on what is left; `synix run` builds exactly that, then a no-op."""
    status, plan = _stale(paths, "status"), _stale(paths, "plan")
    assert status == plan
    again = _cli(paths, "run", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["status"] == "completed"
    built = {layer: v["built"] for layer, v in report["layers"].items()}
    assert built == {"transcripts": 0, "episodes": N - before.get("episodes", 0),
                     "monthly": MONTHS - before.get("monthly", 0), "core": 1}
    assert status == built  # what status said was left is exactly what the run built
    assert _counts(paths) == {"transcripts": N, "episodes": N, "monthly": MONTHS, "core": 1}
    noop = _cli(paths, "run", "--json")
    assert noop.returncode == 0, noop.stderr
    assert all(v["built"] == 0 for v in json.loads(noop.stdout)["layers"].values())
    assert set(_stale(paths, "status").values()) == {0}
    return report


def _latest_run(paths) -> dict:
    out = _cli(paths, "runs", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["runs"][0]


def _assert_stopped_cleanly(paths, proc, expected_code: int) -> dict[str, int]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == expected_code, (out, err)
    assert MESSAGE in err
    assert "Traceback" not in out + err and "STEP_FAILURE" not in out + err
    counts = _counts(paths)
    store = ArtifactStore(paths.store)
    try:
        assert store.get_meta("build:fingerprint") is None  # not recorded as a clean build
        assert store.current("core", "all") is None  # nothing built from the partial layer
    finally:
        store.close()
    run = _latest_run(paths)
    assert run["status"] == "interrupted"
    runs = _dagster_runs(paths, with_outcome=True)
    # none left STARTED (on a loaded machine the work graph can be interrupted before Dagster,
    # still loading, created any run: then there is none to check)
    assert all(status in ("SUCCESS", "FAILURE", "CANCELED") for status, _, _, _ in runs), runs
    # the run Dagster ended as FAILURE is marked as the interrupted one it was
    assert all(outcome == "interrupted" for status, _, _, outcome in runs if status != "SUCCESS")
    return counts


@pytest.mark.slow
def test_sigint_mid_episodes_exits_130_and_resumes(demo_project):
    paths = demo_project
    # slow calls: the work graph starts before Dagster loads, and the signal must come while
    # Dagster records the build with episodes still to go
    proc = _start_build(paths, latency=5.0)
    _wait_until(proc, lambda: _counts(paths).get("episodes", 0) >= 1, "an episode was stored")
    _wait_until(proc, lambda: any(s == "STARTED" for s, _, _ in _dagster_runs(paths)),
                "a Dagster run was started")
    proc.send_signal(signal.SIGINT)
    counts = _assert_stopped_cleanly(paths, proc, 130)
    assert 1 <= counts["episodes"] < N
    # Layers overlap (a month's rollup starts once all its episodes are stored), so a rollup may
    # exist already — but never one built from some of its month's episodes.
    _assert_rollups_cover_their_months(paths)
    # the Dagster run recording the build when the signal came is the failed one
    assert any(status == "FAILURE" for status, _, _ in _dagster_runs(paths))
    _check_resume(paths, counts)


def _assert_rollups_cover_their_months(paths) -> None:
    store = ArtifactStore(paths.store)
    try:
        per_month: dict[str, int] = {}
        for t in store.list_layer("transcripts"):
            month = t.metadata["meta.time.period"]
            per_month[month] = per_month.get(month, 0) + 1
        for rollup in store.list_layer("monthly"):
            assert len(store.parents(rollup.artifact_id)) == per_month[rollup.group_key], rollup.group_key
    finally:
        store.close()


@pytest.mark.slow
def test_sigterm_mid_rollups_exits_143_and_resumes(demo_project):
    paths = demo_project
    proc = _start_build(paths, latency=2.0)

    def rollups_running() -> bool:
        counts = _counts(paths)
        return counts.get("episodes", 0) == N and counts.get("monthly", 0) < MONTHS

    # the last month's rollup starts when its episodes are stored and takes the 2 s latency
    _wait_until(proc, rollups_running, "every episode stored, some rollups not yet")
    proc.send_signal(signal.SIGTERM)
    counts = _assert_stopped_cleanly(paths, proc, 143)
    assert counts["episodes"] == N and counts.get("monthly", 0) < MONTHS
    _assert_rollups_cover_their_months(paths)
    # the monthly layer's Dagster run, if it had started, is the failed one
    monthly_runs = [status for status, _, keys in _dagster_runs(paths) if "monthly" in keys]
    assert monthly_runs in ([], ["FAILURE"])
    _check_resume(paths, counts)


@pytest.mark.slow
def test_kill_9_mid_build_is_marked_interrupted_by_the_next_synix_runs(demo_project):
    paths = demo_project
    proc = _start_build(paths, latency=2.0)
    _wait_until(proc, lambda: _counts(paths).get("episodes", 0) >= 1, "an episode was stored")
    _wait_until(proc, lambda: any(s == "STARTED" for s, _, _ in _dagster_runs(paths)),
                "the episodes run was started")
    proc.send_signal(signal.SIGKILL)
    # Wait for the killed process itself, not for EOF on its pipes: once, under load, they stayed
    # open 60 s after the kill (a child process of the build can hold them a while).
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    store = ArtifactStore(paths.store)
    try:
        killed = store.list_runs(limit=1)[0]
        assert killed.status == "running"  # nobody could record anything else
    finally:
        store.close()
    assert any(s == "STARTED" for s, _, _ in _dagster_runs(paths))
    run = _latest_run(paths)  # `synix runs` notices the owner process is gone
    assert run["run_id"] == killed.run_id and run["status"] == "interrupted"
    assert f"pid {proc.pid}" in run["error"]
    runs = [(s, rid, outcome) for s, rid, _, outcome in _dagster_runs(paths, with_outcome=True)]
    assert ("FAILURE", killed.run_id, "interrupted") in runs and all(s != "STARTED" for s, _, _ in runs)


def _responses(paths, since: float | None = None) -> int:
    """LLM answers in the response cache (each call the build made), or those stored after `since`."""
    import sqlite3

    if not paths.llm_cache.exists():
        return 0
    db = sqlite3.connect(paths.llm_cache)
    try:
        query = "SELECT count(*) FROM responses" + ("" if since is None else " WHERE created_at > ?")
        return db.execute(query, () if since is None else (since,)).fetchone()[0]
    except sqlite3.OperationalError:  # the cache table is not created yet
        return 0
    finally:
        db.close()


@pytest.mark.slow
def test_sigint_at_varied_moments_prints_one_message_and_starts_no_queued_call(tmp_path):
    """Ctrl-C at several moments of a build with many calls queued (2 at a time): every time the
    build exits 130 with the message and no traceback, and the only answers stored after the
    signal are those of the calls already in flight (once, a KeyboardInterrupt swallowed in a
    garbage-collector callback printed a traceback and let every queued call run)."""
    import shutil

    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project

    template = init_project(tmp_path / "template", exports=demo_exports())
    concurrency = 2
    # Each call takes 1.5 s: on a loaded machine the build may see the signal a few hundred ms
    # after it was sent, and a call it started in that gap must not look like a queued call
    # started after the interrupt (it would need a delay of over 1.5 s to finish before exit).
    for attempt, answers_before in enumerate((1, 2, 4, 6, 9, 12)):  # bounded: 6 builds
        paths = ProjectPaths(shutil.copytree(template, tmp_path / f"mem-{attempt}"))
        proc = subprocess.Popen([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run"],
                                env=_env(SYNIX_FAKE_LATENCY_S="1.5", SYNIX_LLM_CONCURRENCY=str(concurrency)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_until(proc, lambda: _responses(paths) >= answers_before, f"{answers_before} answers")
        signalled_at = time.time()
        proc.send_signal(signal.SIGINT)
        try:  # a scheduler waiting for a dropped call once held the exit 60 s
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"build {attempt} still running 30 s after Ctrl-C: {err[-2000:]}")
        assert proc.returncode == 130, (attempt, out, err)
        assert "Traceback" not in out + err and "Exception ignored" not in err, (attempt, err)
        lines = err.strip().splitlines()
        assert lines[-1] == MESSAGE and all(
            line == MESSAGE or line.endswith("partition(s) left to build") for line in lines), (attempt, err)
        assert _responses(paths, since=signalled_at) <= concurrency, attempt  # only those in flight
        assert _responses(paths) < N + MONTHS + 1, attempt


# Runs `synix run` as the program (arguments from sys.argv, as the `synix` script does) and makes
# one more interrupt arrive at a chosen moment after the build decided it was interrupted: as its
# line is written to stderr, while the interpreter shuts down (an atexit callback, run last), or
# after the command raised SystemExit(130) (as in the frames of the `synix` script or runpy).
LATE_INTERRUPT = """
import _thread, atexit, os, signal, sys, time
project, how, moment = sys.argv[1:4]

def interrupt():
    if how == "interrupt_main":  # a redelivery of a swallowed interrupt, landing late
        _thread.interrupt_main(signal.SIGINT)
    else:  # a second Ctrl-C (or SIGTERM) to this process
        os.kill(os.getpid(), getattr(signal, how))
    time.sleep(0.3)  # interrupted by the signal if a raising handler is installed

class Stderr:
    def __init__(self, stream):
        self.stream, self.sent = stream, False

    def write(self, text):
        n = self.stream.write(text)
        if moment == "line" and "interrupted" in text and not self.sent:
            self.sent = True
            self.stream.flush()
            interrupt()
        return n

    def __getattr__(self, name):
        return getattr(self.stream, name)

if moment == "shutdown":
    atexit.register(interrupt)  # registered first: runs after every other exit handler
sys.stderr = Stderr(sys.stderr)
from synix_assets.cli.main import main
sys.argv = ["synix", "-p", project, "run"]
try:
    main()
finally:
    if moment == "after_exit":
        interrupt()
"""


@pytest.mark.slow
@pytest.mark.parametrize("how,moment", [("SIGINT", "line"), ("interrupt_main", "line"),
                                        ("SIGTERM", "line"), ("SIGINT", "shutdown"),
                                        ("SIGINT", "after_exit")])
def test_an_interrupt_after_the_interrupted_line_keeps_exit_130_and_the_one_message(
        demo_project, how, moment):
    """After the build reported its interrupt, another one (a second Ctrl-C, SIGTERM, a late
    redelivery) changes nothing: under load such a late KeyboardInterrupt once turned exit 130
    into death by SIGINT (-2), and could print "Aborted!" or a traceback."""
    paths = demo_project
    proc = subprocess.Popen([PY, "-c", LATE_INTERRUPT, str(paths.root), how, moment],
                            env=_env(SYNIX_FAKE_LATENCY_S="1.5", SYNIX_LLM_CONCURRENCY="2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until(proc, lambda: _responses(paths) >= 1, "the first answer")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (how, moment, err)
    assert "Traceback" not in out + err and "Exception ignored" not in err and "Aborted" not in err, err
    lines = err.strip().splitlines()
    assert lines.count(MESSAGE) == 1 and lines[-1] == MESSAGE and all(
        line == MESSAGE or line.endswith("partition(s) left to build") for line in lines), err
    assert _latest_run(paths)["status"] == "interrupted"


@pytest.mark.slow
def test_a_ctrl_c_landing_in_code_run_from_a_string_still_exits_130(demo_project):
    """dataclasses and namedtuple make their methods with exec()/eval() of a string (many while
    Dagster is imported, when an early Ctrl-C often lands): a KeyboardInterrupt leaving such code
    made CPython end the process by SIGINT (-2, no traceback) after the build had printed its
    line and chosen 130."""
    paths = demo_project
    pipeline = paths.root / "pipeline.py"
    pipeline.write_text(pipeline.read_text() + "\nimport signal as _signal\n"
                        "exec('_signal.raise_signal(_signal.SIGINT)')  # a Ctrl-C lands in it\n")
    out = _cli(paths, "run")
    assert out.returncode == 130, (out.returncode, out.stderr)
    assert out.stderr.strip().splitlines()[-1] == MESSAGE and "Traceback" not in out.stdout + out.stderr
