"""One build at a time per project, across processes (CLI, sensor runs, the UI).

An advisory `flock` on `.synix/build.lock`, re-entrant within a process: a CLI build launches
in-process Dagster runs whose asset steps take the same lock, and must not wait on itself
(whichever thread the executor runs them on).
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from synix_resources.disk import mapped_disk_full
from synix_resources.errors import StoreLockedError
from synix_resources.private import private_state

_held: dict[str, int] = {}
_fds: dict[str, int] = {}
_guard = threading.Lock()


def _try_enter(key: str) -> bool:
    with _guard:
        if _held.get(key):
            _held[key] += 1
            return True
    return False


@contextmanager
def _entered(key: str):
    """The body of a re-entry: the process already holds the flock."""
    try:
        yield
    finally:
        with _guard:
            _held[key] -= 1


@contextmanager
def project_lock(lock_path: Path, *, timeout_s: float = 600.0, poll_s: float = 0.2):
    key = str(lock_path)
    if _try_enter(key):
        with _entered(key):
            yield
        return
    private_state(lock_path.parent)  # every build keeps .synix/ private, old projects included
    fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            if _try_enter(key):  # another thread of this process took it meanwhile
                os.close(fd)
                fd = -1
                with _entered(key):
                    yield
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
                    raise StoreLockedError(
                        f"another Synix build holds {lock_path} (pid {holder}) for over {timeout_s:.0f}s",
                        hint="wait for it to finish, or stop it and run again") from None
                time.sleep(poll_s)
        with mapped_disk_full(lock_path, "taking the build lock"):
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        with _guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _guard:
                _held[key] = 0
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        if fd >= 0:
            os.close(fd)
