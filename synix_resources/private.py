"""Project state is private: memory, audit trails and prompts are for the user alone.

Folders are created 0700 and files 0600, and existing ones are tightened (group/other bits
cleared, silently) the next time Synix opens them. SQLite gives its `-wal`/`-shm`/`-journal`
files the mode of the database file, so a database file made 0600 before SQLite first opens it
keeps its side files private too.
"""
from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("synix.private")

_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def tighten(path: str | os.PathLike) -> None:
    """Clear the group/other permission bits of `path` if it exists (owner bits unchanged)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            os.chmod(path, mode & ~0o077)
    except FileNotFoundError:
        return
    except PermissionError as err:  # someone else's file: nothing we may change, keep going
        log.debug("cannot tighten the mode of %s: %s", path, err)


def private_dir(path: str | os.PathLike) -> Path:
    """`path` as an existing folder only its owner can enter (0700)."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    tighten(path)
    return path


def private_file(path: str | os.PathLike) -> Path:
    """Create `path` empty with mode 0600 if it is missing (an empty file is a valid empty SQLite
    database), and tighten it and its SQLite side files if they exist."""
    path = Path(path)
    if not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    for suffix in ("", *_SQLITE_SIDE_FILES):
        tighten(f"{path}{suffix}")
    return path


def write_private_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to a new file at `path` created 0600 (replaces what was there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    tighten(path)


def private_state(state_dir: str | os.PathLike) -> None:
    """The project's `.synix/` folder at 0700 and the folders and files directly in it (stores,
    search index, LLM cache, build lock, Dagster home) without group/other access."""
    state_dir = private_dir(state_dir)
    for entry in os.scandir(state_dir):
        if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
            tighten(entry.path)
