"""Export files under `synix forget`: which ones hold the conversations, and rewriting them safely.

Confinement: nothing outside the project folder is ever zero-filled, rewritten or deleted, and no
symlink is followed out of it. An export that is a symlink is handled by removing the link itself
(the file it points to is untouched, and the report says so); an export whose real location is
outside the project (a source folder elsewhere, a linked folder) is left as it is and reported —
the conversation's tombstone keeps Synix from reading it again.

Crash safety: a rewrite first writes the kept conversations to `.NAME.forget-new` (fsynced, then
renamed into place from `.NAME.forget-tmp`), and only then zero-fills and replaces the original,
so a kill at any moment leaves either the original or the finished rewrite, never a lost export.
"""
from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from synix_assets.parsers.cursor_db import SUFFIX as CURSOR_STORE
from synix_assets.sources.model import TEXT_SUFFIXES
from synix_resources.live.inbox import Inbox

_ID_KEYS = ("conversation_id", "id", "uuid")
DELETE, REWRITE, UNLINK, OUTSIDE = "delete", "rewrite", "remove-link", "outside-project"
LIVE_SESSIONS = "remove-live-sessions"  # a live inbox: the sessions' turns, summaries, outbox rows
_SQLITE = b"SQLite format 3\x00"


@dataclass(frozen=True)
class FileAction:
    """What forget does to one export file: `path` as the project sees it (never resolved)."""

    path: str
    action: str  # DELETE | REWRITE | UNLINK | OUTSIDE
    points_to: str | None = None  # a link's target, or the real location of an outside file

    def to_json(self) -> dict:
        return {"path": self.path, "action": self.action, "points_to": self.points_to}

    @classmethod
    def from_json(cls, data: dict) -> "FileAction":
        return cls(data["path"], data["action"], data.get("points_to"))


def absolute(path: str | Path, base: Path) -> Path:
    """`path` made absolute against `base` and normalised, without following any symlink."""
    p = Path(path).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def inside(root: Path, path: Path) -> bool:
    """True if `path`'s real location (every link followed) is inside the project folder."""
    real_root = os.path.realpath(root)
    return os.path.commonpath([real_root, os.path.realpath(path)]) == real_root


def plan_file(root: Path, path: Path, whole_file: bool, cids: set[str]) -> FileAction:
    """The action for one export file holding (some of) the forgotten conversations."""
    if path.is_symlink():
        return FileAction(str(path), UNLINK, os.readlink(path))
    if not inside(root, path):
        return FileAction(str(path), OUTSIDE, os.path.realpath(path))
    if path.suffix.lower() == CURSOR_STORE:
        # Cursor's own database (all its chats and settings): never edited, and never taken for a
        # live inbox although it is SQLite too; deleted only when every chat in it is forgotten,
        # else left and reported, the tombstones keeping Synix from reading those chats again.
        return FileAction(str(path), DELETE) if whole_file else FileAction(str(path), OUTSIDE, os.path.realpath(path))
    if _is_sqlite(path):  # a live source's inbox: the sessions go, the inbox stays
        return FileAction(str(path), LIVE_SESSIONS)
    if whole_file:
        return FileAction(str(path), DELETE)
    kept = without(path, cids)
    return FileAction(str(path), REWRITE if kept and kept["items"] else DELETE)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(_SQLITE)) == _SQLITE
    except OSError:
        return False


def _matches(item, cids: set[str]) -> bool:
    return isinstance(item, dict) and any(str(item.get(k)) in cids for k in _ID_KEYS if item.get(k))


def _jsonl_matches(line: str, cids: set[str]) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(row, dict) and str(row.get("sessionId") or row.get("session_id")) in cids


def without(path: Path, cids: set[str]) -> dict | None:
    """The export's conversations minus the forgotten ones ({"kind", "items", "dropped", ...})."""
    if path.suffix.lower() in TEXT_SUFFIXES:  # a note or a session is the whole file
        return {"kind": "text", "items": [], "dropped": 1}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            member = next(n for n in zf.namelist() if n.rsplit("/", 1)[-1] == "conversations.json")
            items = json.loads(zf.read(member))
        kept = [i for i in items if not _matches(i, cids)]
        return {"kind": "zip", "member": member, "items": kept, "dropped": len(items) - len(kept)}
    if path.suffix.lower() == ".jsonl":
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        kept = [ln for ln in lines if not _jsonl_matches(ln, cids)]
        return {"kind": "jsonl", "items": kept, "dropped": len(lines) - len(kept)}
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        items = data["conversations"]
        kept = [i for i in items if not _matches(i, cids)]
        return {"kind": "wrapped", "data": data, "items": kept, "dropped": len(items) - len(kept)}
    items = data if isinstance(data, list) else []
    kept = [i for i in items if not _matches(i, cids)]
    return {"kind": "list", "items": kept, "dropped": len(items) - len(kept)}


def holds_any(path: Path, cids: set[str]) -> bool:
    """Whether a (rewritten) export still holds one of the conversations."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        kept = without(path, cids)
    except (OSError, ValueError, StopIteration, zipfile.BadZipFile):  # not a format we rewrite
        return False
    return bool(kept and kept["dropped"])


def _sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(f".{path.name}.forget-{suffix}")


def sidecars(path: Path) -> list[Path]:
    return [_sidecar(path, "tmp"), _sidecar(path, "new")]


def apply(root: Path, act: FileAction, cids: set[str]) -> None:
    """Carry out one action; safe to repeat after a crash at any point."""
    path = Path(act.path)
    if act.action == OUTSIDE:
        return
    if act.action == UNLINK:
        if path.is_symlink():
            path.unlink()  # the link only: its target is never opened for writing
        return
    if act.action == LIVE_SESSIONS:
        if path.exists():
            inbox = Inbox(path)
            try:
                inbox.forget_sessions(cids)
            finally:
                inbox.close()
        return
    tmp, new = sidecars(path)
    _remove_inside(root, tmp)  # an unfinished rewrite: holds only kept conversations
    if act.action == DELETE:
        scrub_and_remove(root, path)
        _remove_inside(root, new)
        return
    if not new.exists():
        if not path.exists():
            return
        kept = without(path, cids)
        if kept is None or not kept["dropped"]:
            return  # already rewritten
        _write_kept(tmp, kept)
        os.replace(tmp, new)
        _fsync_dir(path.parent)
    if path.exists():
        scrub(root, path)
    os.replace(new, path)
    _fsync_dir(path.parent)


def _write_kept(tmp: Path, kept: dict) -> None:
    if kept["kind"] == "zip":
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(kept["member"], json.dumps(kept["items"], ensure_ascii=False))
    else:
        if kept["kind"] == "jsonl":
            text = "\n".join(kept["items"]) + "\n"
        elif kept["kind"] == "wrapped":
            text = json.dumps({**kept["data"], "conversations": kept["items"]}, ensure_ascii=False)
        else:
            text = json.dumps(kept["items"], ensure_ascii=False)
        tmp.write_text(text, encoding="utf-8")
    with tmp.open("rb") as fh:
        os.fsync(fh.fileno())


def _refuse_outside(root: Path, path: Path) -> None:
    if path.is_symlink() or not inside(root, path):
        raise ValueError(f"refusing to overwrite {path}: it is a link or outside {root}")


def scrub(root: Path, path: Path) -> None:
    """Overwrite a file's bytes in place before it is replaced or deleted (best effort: a
    copy-on-write or journaling file system may still hold old blocks). Only regular files
    inside the project, never through a link."""
    _refuse_outside(root, path)
    size = path.stat().st_size
    with path.open("r+b") as fh:
        for start in range(0, size, 1 << 20):
            fh.write(b"\0" * min(1 << 20, size - start))
        fh.flush()
        os.fsync(fh.fileno())


def scrub_and_remove(root: Path, path: Path) -> None:
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        scrub(root, path)
        path.unlink()


def _remove_inside(root: Path, path: Path) -> None:
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        _refuse_outside(root, path)
        path.unlink()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
