"""The last two steps of `synix forget`: purge SQLite files, then prove nothing is left.

Purge: fold every WAL back and VACUUM with secure_delete, so deleted rows leave the files. A
process holding a read transaction (a long `synix search`, an agent, the Dagster UI) keeps old
pages alive; the purge waits for it at most `SYNIX_FORGET_WAIT_S` seconds and then stops with
`ForgetBlocked` naming the file (the journal keeps the forget pending for a rerun) — it never
reports success while a WAL or free page may still hold the text.

Verify: the raw bytes of every file Synix writes (all of `.synix/` with WAL and SHM files, the
export folders, context documents and other top-level files) are searched for the forgotten
artifact ids and for distinctive lines of the forgotten conversations, as written and as JSON
escapes them. Links are never followed.

Raw reads of project files (the SQLite header check, the byte search) run in a child process:
closing any descriptor of a file drops every POSIX lock this process holds on it, SQLite's locks
on databases and `-shm` files it still has open included, which could let another process (the
UI, a reader) corrupt them.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable

from synix_resources.errors import ForgetBlocked, ForgetUnverified
from synix_resources.settings import settings

SQLITE_MAGIC = b"SQLite format 3\x00"
_READ_BLOCK = 1 << 22
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding synix_assets


def wait_seconds() -> float:
    return settings().forget_wait_s


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _blocked(db_path: Path, target: str, why: str) -> ForgetBlocked:
    return ForgetBlocked(
        f"forget of {target} is not finished: {db_path} is held open by another process ({why}), "
        f"so the forgotten text cannot be purged from it",
        hint="close that process (a search, an agent, `synix ui`) and rerun `synix forget` to "
             "finish — it stays pending until then")


def wait_for_readers(db_path: Path, deadline: float, target: str) -> None:
    """Return once a TRUNCATE checkpoint of `db_path` succeeds (no reader holds an old snapshot
    and the WAL is empty); raise ForgetBlocked at `deadline`."""
    conn = sqlite3.connect(str(db_path), timeout=0.2, isolation_level=None)
    try:
        while True:
            try:
                busy, log_frames, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError:  # a writer holds the lock right now
                busy, log_frames = 1, 1
            if busy == 0 and log_frames in (0, -1):
                return
            if time.monotonic() >= deadline:
                raise _blocked(db_path, target, "a reader with an open transaction")
            time.sleep(0.2)
    finally:
        conn.close()


def purge(db_path: Path, deadline: float, target: str) -> None:
    """Checkpoint, VACUUM with secure_delete, checkpoint again: each step waits (bounded) for
    readers that would keep the old pages."""
    wait_for_readers(db_path, deadline, target)
    conn = sqlite3.connect(str(db_path), timeout=max(0.2, deadline - time.monotonic()),
                           isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("VACUUM")
    except sqlite3.OperationalError as err:
        raise _blocked(db_path, target, str(err)) from err
    finally:
        conn.close()
    wait_for_readers(db_path, deadline, target)


def sqlite_files(folder: Path) -> list[Path]:
    return [p for p in walk(folder) if not p.name.endswith(("-wal", "-shm", "-journal"))
            and is_sqlite(p)]


def walk(folder: Path) -> list[Path]:
    """Regular files under `folder`, links neither followed nor listed."""
    out = []
    if not folder.is_dir() or folder.is_symlink():
        return out
    for base, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(base, d))]
        for name in files:
            path = Path(base) / name
            if stat.S_ISREG(os.lstat(path).st_mode):
                out.append(path)
    return sorted(out)


_ID_HEX = re.compile(rb"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")


def _text_forms(texts: Iterable[str]) -> dict[bytes, str]:
    """Each text as written and as JSON escapes it (exports, Dagster events, cached JSON)."""
    out: dict[bytes, str] = {}
    for text in texts:
        for form in (text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]):
            out.setdefault(form.encode("utf-8"), "forgotten text")
    return out


def leftovers(files: Iterable[Path], texts: Iterable[str], ids: Iterable[str]) -> dict[str, set[str]]:
    """file → kinds of forgotten data found in its raw bytes (never the text itself). Artifact
    ids (`layer-<16 hex>`) are found in one pass by their shape, however many there are."""
    forms = _text_forms(texts)
    by_hex = {i.rsplit("-", 1)[-1].encode(): i.encode() for i in ids}
    text_re = re.compile(b"|".join(re.escape(p) for p in sorted(forms, key=len, reverse=True))) \
        if forms else None
    overlap = max([len(p) for p in forms] + [len(i) for i in by_hex.values()] + [1]) - 1
    found: dict[str, set[str]] = {}
    for path in files:
        try:
            fh = open(path, "rb")
        except OSError:
            continue
        with fh:
            tail = b""
            while True:
                block = fh.read(_READ_BLOCK)
                if not block:
                    break
                data = tail + block
                if text_re is not None and text_re.search(data):
                    found.setdefault(str(path), set()).add("forgotten text")
                for match in _ID_HEX.finditer(data):
                    full = by_hex.get(match.group(0))
                    if full and data[max(0, match.end() - len(full)):match.end()] == full:
                        found.setdefault(str(path), set()).add("a forgotten artifact id")
                        break
                tail = data[-overlap:]
    return found


def in_child(command: str, payload: dict):
    """Run `sqlite-files` or `leftovers` on `payload` in a child process (see the module doc)."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "synix_assets.forget.verify", command],
                          input=json.dumps(payload), capture_output=True, text=True, env=env,
                          check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ForgetUnverified(f"the forget check could not read the project's files: {last}",
                               hint="fix the cause and rerun `synix forget` (it stays pending)")
    return json.loads(proc.stdout)


def _main(command: str) -> None:
    payload = json.load(sys.stdin)
    if command == "sqlite-files":
        result = [str(p) for p in sqlite_files(Path(payload["folder"]))]
        result += [f for f in payload.get("also", []) if f not in result and is_sqlite(Path(f))]
    else:
        found = leftovers([Path(f) for f in payload["files"]], payload["texts"], payload["ids"])
        result = {path: sorted(kinds) for path, kinds in found.items()}
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    _main(sys.argv[1])
