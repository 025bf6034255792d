"""One build at a time per project, across processes (CLI, sensor runs, the UI).

An advisory `flock` on `.synix/build.lock`, re-entrant within a process so a CLI build that
launches in-process Dagster runs does not wait on itself.
"""
from __future__ import annotations

import fcntl
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from synix_resources.errors import StoreLockedError

_held: dict[str, int] = {}
_guard = threading.RLock()


@contextmanager
def project_lock(lock_path: Path, *, timeout_s: float = 600.0, poll_s: float = 0.2):
    key = str(lock_path)
    with _guard:
        if _held.get(key):
            _held[key] += 1
            try:
                yield
            finally:
                _held[key] -= 1
            return
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
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
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            _held[key] = 1
            try:
                yield
            finally:
                _held[key] = 0
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
