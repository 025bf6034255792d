"""The forget journal: what a `synix forget` will remove, written durably before anything is.

One JSON file, `.synix/forget.journal.json` (mode 600), replaced atomically (write, fsync,
rename, fsync the folder) whenever a phase finishes. While it exists a forget is pending: a rerun
of `synix forget` (with or without the id) and the next `synix run` finish it first. It holds the
ids to remove and a few distinctive lines of the forgotten text (to verify nothing is left), so it
is zero-filled before it is deleted at the end.
"""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from synix_assets.project import ProjectPaths
from synix_resources.errors import ForgetIncomplete
from synix_resources.settings import Settings, settings

JOURNAL_NAME = "forget.journal.json"
# Tests only: SIGKILL this process right after the work of the named phase, before the journal
# records it done (the worst moment for a resume), e.g. SYNIX_FORGET_CRASH_AFTER=cache.
CRASH_ENV = Settings.forget_crash_after.name


def journal_path(paths: ProjectPaths) -> Path:
    return paths.state_dir / JOURNAL_NAME


def load(paths: ProjectPaths) -> dict[str, Any] | None:
    path = journal_path(paths)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ForgetIncomplete(f"the pending forget's journal {path} cannot be read: {err}",
                               hint="restore it from a backup; deleting it abandons the pending "
                                    "forget, then run `synix forget ID` again") from err


def save(paths: ProjectPaths, journal: dict[str, Any]) -> None:
    path = journal_path(paths)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(journal, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def mark_done(paths: ProjectPaths, journal: dict[str, Any], phase: str, **results: Any) -> None:
    if settings().forget_crash_after == phase:
        os.kill(os.getpid(), signal.SIGKILL)
    journal["done"] = sorted(set(journal.get("done", [])) | {phase})
    journal.setdefault("results", {}).update(results)
    save(paths, journal)


def discard(paths: ProjectPaths) -> None:
    """Zero-fill and delete the journal (it holds lines of the forgotten text)."""
    for path in (journal_path(paths), journal_path(paths).with_name(f".{JOURNAL_NAME}.tmp")):
        if path.is_file() and not path.is_symlink():
            with path.open("r+b") as fh:
                fh.write(b"\0" * path.stat().st_size)
                fh.flush()
                os.fsync(fh.fileno())
            path.unlink()
