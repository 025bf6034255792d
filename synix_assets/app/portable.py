"""One portable SQLite file per project (design 003): `synix pack OUT.db` writes the project —
pipeline, exports and live inbox, store, search index, evidence ledger, agent memories, LLM
cache, config, branches — into one file (synix_resources/bundle.py) that `synix unpack IN.db
DIR` turns into a project on another machine, where `synix run` has nothing to do and a search
answers at once.

Each SQLite file is copied through SQLite's backup API first, so a server reading it (or a WAL
not yet folded back) never puts a torn or stale copy in the pack. Left out: the Dagster home
(this machine's run history; the next build there records its own), the build lock, SQLite's
side files (folded in by the backup) and a forget's journal. A tenant of a home server is one
project: `synix pack -p HOME/tenants/NAME`.
"""
from __future__ import annotations

import os
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from synix_assets.project import ProjectPaths
from synix_resources.bundle import Bundle, is_sqlite, write_bundle
from synix_resources.errors import ProjectFileError

LEFT_OUT_DIRS = ("dagster", "__pycache__")
LEFT_OUT_SUFFIXES = ("-wal", "-shm", "-journal")
LEFT_OUT_NAMES = ("build.lock",)


@dataclass
class PackReport:
    path: str
    files: int
    bytes: int
    project: str

    def to_json(self) -> dict:
        return {"path": self.path, "files": self.files, "bytes": self.bytes, "project": self.project}


def _members(paths: ProjectPaths, out: Path) -> list[tuple[str, Path]]:
    root = paths.root.resolve()
    found: list[tuple[str, Path]] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_symlink() or not path.is_file() or path.resolve() == out.resolve():
            continue
        if any(part in LEFT_OUT_DIRS for part in rel.parts[:-1]) or path.name in LEFT_OUT_NAMES \
                or path.name.endswith(LEFT_OUT_SUFFIXES) or path.name.startswith(".forget"):
            continue
        if rel.parts[0] == ".synix" and len(rel.parts) > 1 and rel.parts[1] == "dagster":
            continue
        found.append((rel.as_posix(), path))
    return found


def _check_packable(paths: ProjectPaths, pipeline) -> None:
    if paths.on_postgres:
        raise ProjectFileError("this project's store is a PostgreSQL database, which one file cannot hold",
                               hint="pack a project whose store is SQLite (the default)")
    root = paths.root.resolve()
    for src in pipeline.sources.values():
        where = pipeline.resolve(Path(src.path))
        if not where.is_relative_to(root):
            raise ProjectFileError(f"source {src.name!r} reads {where}, outside the project folder, "
                                   "so the file could not take it along",
                                   hint="move it into the project folder and point the source there")


def pack(paths: ProjectPaths, out: str | Path) -> PackReport:
    """Write the project at `paths` into one SQLite file at `out`."""
    out = Path(out).expanduser().absolute()
    out = out.parent.resolve() / out.name  # `../me.db` said plainly
    pipeline = paths.load_pipeline()
    _check_packable(paths, pipeline)
    members = _members(paths, out)
    store = Path(paths.store)
    if not store.resolve().is_relative_to(paths.root.resolve()) and store.is_file():
        members.append((".synix/synix.db", store))  # SYNIX_STORE_PATH elsewhere: the default place
    with tempfile.TemporaryDirectory(prefix="synix-pack-") as scratch:
        entries = []
        for n, (name, path) in enumerate(members):
            if is_sqlite(path):
                copy = Path(scratch) / f"{n}.db"
                _backup(path, copy)
                path = _keep_time(path, copy)
            entries.append((name, path))
        packed = write_bundle(out, entries, {
            "project": paths.root.name, "pipeline": pipeline.name,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return PackReport(str(out), len(packed), sum(p.size for p in packed), paths.root.name)


def _backup(source: Path, copy: Path) -> None:
    """A consistent copy of a SQLite file (its WAL folded in), taken while others may use it."""
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    dst = sqlite3.connect(copy)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode = wal")  # as Synix opens its files
    except sqlite3.DatabaseError as err:
        raise ProjectFileError(f"cannot read {source} to pack it ({err})",
                               hint="check the file, or move it aside and rebuild") from None
    finally:
        dst.close()
        src.close()


def _keep_time(original: Path, copy: Path) -> Path:
    """The copy keeps the file's time: the next scan there trusts it as the same file."""
    st = original.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    return copy


def unpack(source: str | Path, dest: str | Path) -> dict:
    """Make the project in `source` (a file `pack` wrote) at `dest` (new or empty folder)."""
    from synix_assets.dagster_defs.instance_files import write_dotenv

    with Bundle(Path(source).expanduser()) as bundle:
        where = bundle.unpack(Path(dest))
        if (where / ".env").is_file():  # `dagster dev` there must use this copy's Dagster home
            write_dotenv(where, ProjectPaths(where).dagster_home)
        return {"path": str(where), "files": len(bundle.files),
                "project": bundle.manifest.get("project", ""), "pipeline": bundle.manifest.get("pipeline", ""),
                "packed_at": bundle.manifest.get("created_at", "")}
