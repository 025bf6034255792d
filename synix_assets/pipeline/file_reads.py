"""The files a pipeline file read while it loaded — itself, a pipeline file it loads (a branch's
declaration.py), a TOML it declares from: the loader keeps a loaded declaration until one of
them changes (pipeline/loader.py)."""
from __future__ import annotations

import contextlib
import hashlib
import threading
from pathlib import Path
from typing import Iterator

Reads = tuple[tuple[Path, str], ...]  # (file, sha256 of its content when it was read)

_local = threading.local()


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def note(path: Path, sha256: str | None = None) -> None:
    """Record that the pipeline file loading in this thread read `path` (no-op outside a load)."""
    reads = getattr(_local, "reads", None)
    if reads is not None:
        reads.append((Path(path).resolve(), sha256 or digest(path)))


def note_all(reads: Reads) -> None:
    for path, sha256 in reads:
        note(path, sha256)


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[Path, str]]]:
    """Collect the files read in the block; they count as read by the enclosing load too."""
    outer = getattr(_local, "reads", None)
    reads: list[tuple[Path, str]] = []
    _local.reads = reads
    try:
        yield reads
    finally:
        _local.reads = outer
        if outer is not None:
            outer.extend(reads)


def unchanged(reads: Reads) -> bool:
    try:
        return all(digest(p) == d for p, d in reads)
    except OSError:  # a file that load read is gone: load again (and report it then)
        return False
