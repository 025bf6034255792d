"""A build's helper process: a second Python interpreter that does one job beside the build on
the other core (the search index, engine/background_index.py; the evidence ledger's feed,
app/ledger.py), told its job in one JSON line on stdin and answering in JSON lines.

A new interpreter running a module (`python -m`), not multiprocessing: spawn and forkserver would
run the caller's main module again in it (a script that calls `Pipeline.run()` at its top level
would build again), and fork would copy the build's threads mid-flight.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO


def start(module: str, job: dict) -> subprocess.Popen:
    """Start `python -m module` and hand it `job`; its answers are read from `.stdout`."""
    proc = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=child_env())
    proc.stdin.write(json.dumps(job) + "\n")
    proc.stdin.flush()
    return proc


def end(proc: subprocess.Popen, grace_s: float) -> None:
    """Close the helper's input (one waiting for more input ends on it), give it `grace_s` to
    exit, then terminate it (kill if it ignores that) and close its pipes."""
    try:
        proc.stdin.close()
    except OSError:
        pass  # it has exited already: nothing is waiting on the input
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.terminate()  # a transaction it had not committed is lost; what it committed stays
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.stdout.close()


def child_env() -> dict:
    """This process's environment, with the folder this package is imported from first on the
    path, so the child runs the same code (a source checkout, an editable install)."""
    here = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": here + (os.pathsep + path if path else "")}


def become_helper() -> tuple[dict, IO[str]]:
    """In the helper: die with the build, leave Ctrl-C to the build (it reaches the whole process
    group; the build decides and stops its helpers itself), and keep stdout for the answers —
    anything else printed (a pipeline file's own prints while it loads) goes where stderr goes.
    Returns the job and the answers' stream."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return json.loads(sys.stdin.readline()), answers


def answer(answers: IO[str], message: dict) -> None:
    answers.write(json.dumps(message) + "\n")
    answers.flush()


def _die_with_parent() -> None:
    """On Linux, the kernel ends this process when the build's process dies (a SIGKILL leaves no
    helper behind); elsewhere the build's own stop (stdin closed, then terminate) ends it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: no parent-death signal; the build stops its helper itself
