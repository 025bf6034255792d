"""One build at a time per project, across processes (CLI, sensor runs, the UI).

An advisory `flock` on `.synix/build.lock` — or, when the project's store is PostgreSQL, a
session-level advisory lock in that database, so workers on several hosts share it (and a
killed holder's lock goes with its connection). Re-entrant within a process: a CLI build
launches in-process Dagster runs whose asset steps take the same lock, and must not wait on
itself (whichever thread the executor runs them on).
"""
from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from synix_resources.disk import mapped_disk_full
from synix_resources.errors import StoreLockedError
from synix_resources.private import private_state
from synix_resources.store.dialect import is_postgres_url

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


class _FileLock:
    """`flock` on a file that also records the holder's pid."""

    def __init__(self, lock_path: Path):
        self.where = str(lock_path)
        private_state(lock_path.parent)  # every build keeps .synix/ private, old projects included
        self._path = lock_path
        self._fd = os.open(self.where, os.O_RDWR | os.O_CREAT, 0o600)

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        with mapped_disk_full(self._path, "taking the build lock"):
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, str(os.getpid()).encode(), 0)
        return True

    def holder(self) -> str:
        pid = os.pread(self._fd, 64, 0).decode(errors="replace").strip()
        return f"pid {pid}" if pid else "another process"

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


class _PostgresLock:
    """`pg_try_advisory_lock` on a connection of its own, named after this process so a
    waiting build can say who holds it; the server drops it if the holder dies."""

    def __init__(self, url: str):
        from synix_resources.store.postgres import ADVISORY_KEY, BUILD_LOCK, connect, display_url

        self.where = f"the build lock in {display_url(url)}"
        self._key, self._purpose = ADVISORY_KEY, BUILD_LOCK
        self._conn = connect(url, busy_timeout_ms=30000, what="the build lock's database")
        self._conn.execute("SELECT set_config('application_name', ?, false)",
                           (f"synix-build pid {os.getpid()} on {socket.gethostname()}"[:63],))

    def try_acquire(self) -> bool:
        return bool(self._conn.execute(f"SELECT pg_try_advisory_lock({self._key})",
                                       (self._purpose,)).fetchone()[0])

    def holder(self) -> str:
        row = self._conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            f"WHERE l.locktype = 'advisory' AND l.granted AND l.pid != pg_backend_pid() AND "
            f"(l.classid::bigint << 32) | l.objid::bigint = ({self._key}) LIMIT 1",
            (self._purpose,)).fetchone()
        return row[0] if row and row[0] else "another process"

    def release(self) -> None:
        self._conn.execute(f"SELECT pg_advisory_unlock({self._key})", (self._purpose,))

    def close(self) -> None:
        self._conn.close()


@contextmanager
def project_lock(lock_path: Path | str, *, timeout_s: float = 600.0, poll_s: float = 0.2):
    """Hold the project's build lock: `lock_path` is the lock file, or the PostgreSQL store's
    URL (then the lock is an advisory lock in that database)."""
    key = str(lock_path)
    if _try_enter(key):
        with _entered(key):
            yield
        return
    lock = _PostgresLock(key) if is_postgres_url(key) else _FileLock(Path(lock_path))
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            if _try_enter(key):  # another thread of this process took it meanwhile
                lock.close()
                lock = None
                with _entered(key):
                    yield
                return
            if lock.try_acquire():
                break
            if time.monotonic() >= deadline:
                raise StoreLockedError(
                    f"another Synix build holds {lock.where} ({lock.holder()}) for over "
                    f"{timeout_s:.0f}s", hint="wait for it to finish, or stop it and run again")
            time.sleep(poll_s)
        with _guard:
            _held[key] = 1
        try:
            yield
        finally:
            with _guard:
                _held[key] = 0
            lock.release()
    finally:
        if lock is not None:
            lock.close()
