"""One portable SQLite file holding a whole folder (design 003: "one SQLite file per user, copy
it anywhere"): what `synix pack` writes and `synix unpack` reads.

Format (`PRAGMA application_id` = 'SYNX', `user_version` = FORMAT_VERSION):
- `manifest(key, value)`: `format` = "synix-project", `version`, and what the packer says
  (project, pipeline, created_at, …);
- `files(path, size, mode, mtime_ns, sha256)`: each file by its folder-relative POSIX path;
- `chunks(path, n, data)`: its bytes in 8 MB pieces (SQLite caps one value at 1 GB).

Reading checks, in order, and refuses with one line: a SQLite file at all, Synix's application
id and format, a format this version reads, SQLite's `quick_check`, then every file's size and
SHA-256 as it is written out. Unpacking writes into a fresh sibling folder and renames it into
place at the end, so a refused or interrupted unpack leaves no half-made project.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterable

from synix_resources.errors import ProjectFileError

APPLICATION_ID = 0x53594E58  # "SYNX"
FORMAT = "synix-project"
FORMAT_VERSION = 1
CHUNK = 8 << 20
SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class PackedFile:
    path: str  # folder-relative, POSIX
    size: int
    mode: int
    mtime_ns: int
    sha256: str


def is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def _safe_relative(name: str) -> PurePosixPath:
    """A stored path that stays inside the folder it is unpacked into."""
    rel = PurePosixPath(name)
    if not name or rel.is_absolute() or any(p in ("", ".", "..") for p in rel.parts) or "\\" in name \
            or "\x00" in name:
        raise ProjectFileError(f"the project file names a path outside its folder ({name[:80]!r})",
                               hint="it was not made by `synix pack`; do not unpack it")
    return rel


def write_bundle(out: Path, files: Iterable[tuple[str, Path]], manifest: dict[str, str]) -> list[PackedFile]:
    """Write `files` ((relative name, file to read), each read once, streamed) into a new
    bundle at `out` (replaced only once complete)."""
    out = Path(out)
    tmp = out.with_name(f".{out.name}.packing-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    packed: list[PackedFile] = []
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        conn.execute("BEGIN")
        conn.execute("CREATE TABLE manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
                     "mode INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL)")
        conn.execute("CREATE TABLE chunks (path TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, "
                     "PRIMARY KEY (path, n))")
        for name, source in files:
            _safe_relative(name)
            st = source.stat()
            digest, size = hashlib.sha256(), 0
            with source.open("rb") as fh:
                for n, block in enumerate(iter(lambda: fh.read(CHUNK), b"")):
                    conn.execute("INSERT INTO chunks (path, n, data) VALUES (?, ?, ?)", (name, n, block))
                    digest.update(block)
                    size += len(block)
            item = PackedFile(name, size, st.st_mode & 0o777, st.st_mtime_ns, digest.hexdigest())
            conn.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?)",
                         (item.path, item.size, item.mode, item.mtime_ns, item.sha256))
            packed.append(item)
        conn.executemany("INSERT INTO manifest VALUES (?, ?)",
                         [("format", FORMAT), ("version", str(FORMAT_VERSION)),
                          ("files", str(len(packed))), *((k, str(v)) for k, v in manifest.items())])
        conn.execute("COMMIT")
        conn.close()
        os.chmod(tmp, 0o600)  # it holds the whole memory
        os.replace(tmp, out)
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    return packed


class Bundle:
    """A bundle opened for reading (read-only), checked as a Synix project file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise ProjectFileError(f"there is no project file at {self.path}",
                                   hint="give the file `synix pack` wrote")
        if not is_sqlite(self.path):
            raise ProjectFileError(f"{self.path} is not a Synix project file (not a SQLite file)",
                                   hint="give the file `synix pack` wrote")
        try:
            self._conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None
        if app_id != APPLICATION_ID:
            self.close()
            raise ProjectFileError(f"{self.path} is a SQLite file, but not a Synix project file",
                                   hint="give the file `synix pack` wrote (a project's synix.db is "
                                        "not one: pack the project folder)")
        if version > FORMAT_VERSION:
            self.close()
            raise ProjectFileError(f"{self.path} is a Synix project file of format {version}; this "
                                   f"Synix reads format {FORMAT_VERSION}", hint="upgrade synix")
        try:
            check = self._conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(check)
            self.manifest = dict(self._conn.execute("SELECT key, value FROM manifest"))
            self.files = [PackedFile(*r) for r in self._conn.execute(
                "SELECT path, size, mode, mtime_ns, sha256 FROM files ORDER BY path")]
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None
        if self.manifest.get("format") != FORMAT or self.manifest.get("files") != str(len(self.files)):
            self.close()
            raise ProjectFileError(f"{self.path} is damaged: its manifest does not describe its files",
                                   hint="pack the project again")

    def _damaged(self, err: Exception) -> ProjectFileError:
        self.close()
        why = " ".join(str(err).split())
        why = why if len(why) <= 120 else why[:120].rstrip() + "…"  # quick_check lists every page
        return ProjectFileError(f"{self.path} is damaged ({why})",
                                hint="copy it again from where it was packed, or pack the project again")

    def close(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
            self._conn = None

    def __enter__(self) -> "Bundle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def unpack(self, dest: Path) -> Path:
        """Write every file under `dest` (which must not exist, or be an empty folder)."""
        dest = Path(dest).expanduser().absolute()
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise ProjectFileError(f"{dest} already exists and is not an empty folder",
                                   hint="unpack into a new folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.unpacking-", dir=dest.parent))
        try:
            for item in self.files:
                self._write(item, work)
            if dest.exists():
                dest.rmdir()
            os.replace(work, dest)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return dest

    def _write(self, item: PackedFile, root: Path) -> None:
        target = root.joinpath(*_safe_relative(item.path).parts)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # project state is private
        digest, size = hashlib.sha256(), 0
        try:
            with target.open("wb") as fh:
                for (block,) in self._conn.execute("SELECT data FROM chunks WHERE path = ? ORDER BY n",
                                                   (item.path,)):
                    fh.write(block)
                    digest.update(block)
                    size += len(block)
        except sqlite3.DatabaseError as err:
            raise self._damaged(err) from None
        if size != item.size or digest.hexdigest() != item.sha256:
            raise ProjectFileError(f"{self.path} is damaged: {item.path} does not match its checksum",
                                   hint="copy it again from where it was packed, or pack the project again")
        os.chmod(target, item.mode & 0o700 if item.mode & 0o700 else 0o600)
        os.utime(target, ns=(item.mtime_ns, item.mtime_ns))
