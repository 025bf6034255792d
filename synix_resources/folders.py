"""Making and removing folders that are named after something (a branch, a tenant, a run).

Every removal proves first that the folder lies strictly inside the folder it belongs in (its
containing folders resolved, links followed; the folder itself never followed), so a name or id
that slipped through as '', '.', '..' or a link can never take its parent or anything outside
with it. A clean-up after a failed create removes only the folder that same call made (same
device and inode), never one that was there before.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from synix_resources.errors import SynixError, UnsafeRemoval


def inside(path: str | os.PathLike, parent: str | os.PathLike) -> Path:
    """`path`, located (its containing folder resolved, its own last part kept as it is), if it
    lies strictly inside `parent`; UnsafeRemoval otherwise."""
    path, parent = Path(path), Path(parent).resolve()
    if path.name in ("", ".", ".."):
        raise UnsafeRemoval(f"refused {str(path)!r}: it names no folder inside {parent}")
    located = path.parent.resolve() / path.name
    if parent not in located.parents:
        raise UnsafeRemoval(f"refused {str(located)!r}: it is not strictly inside {parent}")
    return located


def remove_inside(path: str | os.PathLike, parent: str | os.PathLike, *,
                  ignore_errors: bool = False) -> bool:
    """Remove `path` (a folder with everything in it, or a file or link, never followed) after
    proving it lies strictly inside `parent`; False if there was nothing to remove.
    `ignore_errors` covers failures of the removal itself, never the proof."""
    located = inside(path, parent)
    try:
        if located.is_symlink() or (located.exists() and not located.is_dir()):
            located.unlink()
            return True
        if not located.exists():
            return False
        shutil.rmtree(located)
    except OSError:
        if not ignore_errors:
            raise
    return True


@contextmanager
def new_folder(path: str | os.PathLike, parent: str | os.PathLike, *,
               taken: SynixError) -> Iterator[Path]:
    """Make `path` (0700), which must not exist yet (else `taken` is raised), strictly inside
    `parent` (made if missing); if the block raises, remove it again, but only while it is
    still the folder this call made."""
    Path(parent).mkdir(mode=0o700, parents=True, exist_ok=True)
    located = inside(path, parent)
    try:
        os.mkdir(located, 0o700)
    except FileExistsError:
        raise taken from None
    made = os.lstat(located)
    try:
        yield located
    except BaseException:
        if _same(located, made):
            shutil.rmtree(located, ignore_errors=True)
        raise


def _same(path: Path, made: os.stat_result) -> bool:
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino)
