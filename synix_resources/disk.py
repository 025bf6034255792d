"""Recognise "the disk is full" however it surfaces, and say it as one `DiskFullError` line.

A full disk reaches us as `OSError(ENOSPC/EDQUOT)` from plain file writes, as SQLITE_FULL
("database or disk is full") from SQLite, wrapped by SQLAlchemy when Dagster's storage writes,
and sometimes as SQLITE_IOERR ("disk I/O error") when SQLite cannot grow its -wal/-shm file. The
last one also means a failing disk, so it counts as "full" only when the file system really has
(almost) no space left, or a file-size cap (`ulimit -f`) is in force. Every writer rolls back
on error, so the message can promise that nothing already saved was lost.
"""
from __future__ import annotations

import errno
import functools
import os
import resource
import sqlite3
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from synix_resources.errors import DiskFullError

# EFBIG: a file-size limit (RLIMIT_FSIZE, some quotas) stops a write the same way.
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_SQLITE_FULL = 13
_SQLITE_IOERR = 10
_NEARLY_FULL_BYTES = 1 << 20  # below this much free space an I/O error is a full disk
# its storage writers, and what drives its runs (a launcher frame is where a run's write failed)
_DAGSTER_MODULES = ("dagster", "sqlalchemy", "synix_assets.dagster_defs", "synix_assets.orchestration")
FIX = "free disk space and rerun `synix run`; it resumes where it stopped"


def free_bytes(path: str | os.PathLike) -> int | None:
    """Bytes available to this user on the file system holding `path` (or its nearest parent)."""
    here = Path(path)
    for folder in (here, *here.parents):
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def exception_chain(exc: BaseException | None) -> Iterator[BaseException]:
    """`exc` and the exceptions it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < 20:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_disk_full(exc: BaseException, path: str | os.PathLike | None = None) -> bool:
    """Whether `exc` (or an exception it was raised from) says the disk is full. `path`, the
    file being written, lets an SQLite I/O error count when its file system is out of space."""
    for item in exception_chain(exc):
        if isinstance(item, DiskFullError):
            return True
        if isinstance(item, OSError) and item.errno in _FULL_ERRNOS:
            return True
        if isinstance(item, sqlite3.Error):
            code = (getattr(item, "sqlite_errorcode", None) or 0) & 0xFF
            if code == _SQLITE_FULL or "database or disk is full" in str(item).lower():
                return True
            if (code == _SQLITE_IOERR or "disk i/o error" in str(item).lower()) and \
                    (_file_size_capped() or _nearly_full(path)):
                return True
    return False


def _nearly_full(path: str | os.PathLike | None) -> bool:
    free = free_bytes(path) if path is not None else None
    return free is not None and free < _NEARLY_FULL_BYTES


def _file_size_capped() -> bool:
    # Under `ulimit -f` SQLite reports a write past the cap (EFBIG) as a plain I/O error.
    return resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY


def disk_full_error(path: str | os.PathLike, action: str | None = None) -> DiskFullError:
    doing = f" while {action}" if action else ""
    return DiskFullError(f"the disk is full: cannot write {path}{doing}; nothing already saved "
                         "was lost", hint=FIX)


def disk_full_from(exc: BaseException, state_dir: Path | None) -> DiskFullError | None:
    """A `DiskFullError` for `exc` if it is a full disk that no Synix writer named (Dagster's
    storage during a build), naming the file if the error has one, else Dagster's storage or the
    project's state folder; None for any other failure."""
    if not is_disk_full(exc, state_dir or os.getcwd()):
        return None
    chain = list(exception_chain(exc))
    named = next((e.filename for e in chain if getattr(e, "filename", None)), None)
    in_dagster = any(frame.f_globals.get("__name__", "").startswith(_DAGSTER_MODULES)
                     for e in chain for frame, _ in traceback.walk_tb(e.__traceback__))
    if named:
        return disk_full_error(named)
    if in_dagster and state_dir is not None:
        return disk_full_error(f"{state_dir / 'dagster'} (Dagster's run storage)")
    return disk_full_error(state_dir or "the project folder")


@contextmanager
def mapped_disk_full(path: str | os.PathLike, action: str | None = None) -> Iterator[None]:
    """Re-raise a full-disk failure inside the block as `DiskFullError` naming `path`."""
    try:
        yield
    except DiskFullError:
        raise
    except (OSError, sqlite3.Error) as exc:
        if is_disk_full(exc, path):
            raise disk_full_error(path, action) from exc
        raise


def maps_disk_full(action: str) -> Callable:
    """Method decorator: `mapped_disk_full(self.path, action)` around the method."""
    def wrap(method: Callable) -> Callable:
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            with mapped_disk_full(self.path, action):
                return method(self, *args, **kwargs)
        return wrapper
    return wrap
