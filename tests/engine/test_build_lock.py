"""The project's build lock on both backends: a file `flock`, or a PostgreSQL advisory lock when
the store is PostgreSQL (one lock for every host's workers; it dies with its holder)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from synix_resources.errors import StoreLockedError
from synix_resources.process.locking import project_lock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The holder restores SIGTERM's default action: a launcher that ignores or blocks it (a detached CI
# shell) would otherwise leave the holder sleeping after _stop.
HOLDER = """
import signal, sys, time
from synix_resources.process.locking import project_lock
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
with project_lock(sys.argv[1], timeout_s=30):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture(params=["file", "postgres"])
def lock_target(request, tmp_path):
    if request.param == "file":
        (tmp_path / ".synix").mkdir()
        return tmp_path / ".synix" / "build.lock"
    return request.getfixturevalue("postgres_url")


def _start_holder(target) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(target)], stdout=subprocess.PIPE,
                            text=True, env=env)
    line = proc.stdout.readline()  # bounded by the holder's own 30 s lock timeout
    assert line.strip() == "held", f"holder did not take the lock (exit {proc.poll()})"
    return proc


def _stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.wait(timeout=30)
    proc.stdout.close()


def test_a_second_process_waits_then_fails_naming_the_holder(lock_target):
    proc = _start_holder(lock_target)
    try:
        with pytest.raises(StoreLockedError) as info:
            with project_lock(lock_target, timeout_s=0.5, poll_s=0.05):
                pass
        message = info.value.one_line()
        assert "another Synix build holds" in message and f"pid {proc.pid}" in message
    finally:
        _stop(proc)


def test_the_lock_of_a_killed_holder_is_free_at_once(lock_target):
    proc = _start_holder(lock_target)
    _stop(proc, signal.SIGKILL)
    with project_lock(lock_target, timeout_s=5, poll_s=0.05):
        pass


def test_the_lock_is_reentrant_within_a_process_and_other_threads_share_it(lock_target):
    entered = []

    def in_thread():
        with project_lock(lock_target, timeout_s=1):
            entered.append("thread")

    with project_lock(lock_target, timeout_s=1):
        with project_lock(lock_target, timeout_s=1):
            entered.append("nested")
        worker = threading.Thread(target=in_thread)
        worker.start()
        worker.join(10)
    assert entered == ["nested", "thread"]
    proc = _start_holder(lock_target)  # released: another process can take it now
    _stop(proc)
