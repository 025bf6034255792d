"""Opening an export file, the checks made before anything is yielded, and telling its format.

`inspect` runs every up-front check (missing, 0-byte, binary, UTF-16, gzip, not UTF-8, not JSON,
cut off, zip without conversations.json) and sniffs the format from the first keys:

* a key that only one format's entry has (`_DECISIVE_KEYS`) decides wherever it sits among the
  entry's keys; then a coding agent's session key (`_AGENT_KEYS`: Codex CLI, Gemini CLI);
* Claude Code's line keys decide only when nothing else did, and `type`, `timestamp` and
  `sessionId` alone never do (`_SHARED_LINE_KEYS`: Codex and Gemini lines have them too), except
  `type` with `sessionId` (a queue-operation line);
* in a list, the first entries' keys: decisive keys, then `_ITEM_KEYS`, then Gemini's prompt log
  or checkpoint (`parts`);
* `{history: [...]}` is a Gemini CLI checkpoint (Open WebUI's `history` is an object) and
  `{session, items}` the first Codex CLI's single-JSON rollout, `{kind, v}` VS Code's Copilot
  Chat session log (`chatSessions/*.jsonl`).

Markdown and text files never reach here: detect.py hands them to textfiles.py.
"""
from __future__ import annotations

import codecs
import re
import zipfile
import zlib
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import IO, Iterator

from synix_resources.errors import ExportFormatError

from . import codex, copilot, copilot_log, gemini, gemini_checkpoint
from .jsonscan import (RawEntry, StructureError, entries, field_opener, line_entries, object_keys,
                       top_level_fields)
from .model import name_is_utf8, printable_path

_HEAD_BYTES = 64 * 1024
# Fewer, larger reads: the scanner's per-read cost is small, memory cost is one buffer.
_READ_BYTES = 4 * 1024 * 1024
# A ChatGPT, Claude or Open WebUI export saved one conversation per line: read line by line.
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
LINES_LAYOUT = "lines"
_SNIFF_ITEMS = 5  # conversations looked at before calling the format unknown
_BOM = codecs.BOM_UTF8
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # raw control bytes: JSON never has them
_ZIP_MAGIC = b"PK\x03\x04"
_MEMBER = "conversations.json"
FIX_EXPORT = "export it again (ChatGPT: Settings → Data controls → Export data; Claude: Settings → Privacy → Export data)"
_SESSION_FIX = ("a session file that is still being written is read once it is complete; "
                "if it stays cut off, copy it again")

# A key seen in the first conversation object decides the format.
_ITEM_KEYS = {
    "mapping": "chatgpt", "current_node": "chatgpt", "conversation_id": "chatgpt",
    "create_time": "chatgpt", "update_time": "chatgpt", "moderation_results": "chatgpt",
    "default_model_slug": "chatgpt", "plugin_ids": "chatgpt",
    "chat_messages": "claude", "uuid": "claude", "account": "claude",
    "created_at": "claude", "updated_at": "claude", "user_id": "openwebui",
}
# A key that only one format's entry has decides, wherever it sits among the entry's keys.
_DECISIVE_KEYS = {"mapping": "chatgpt", "chat_messages": "claude", "chat": "openwebui",
                  "history": "openwebui", **{k: copilot.FORMAT for k in copilot.SESSION_KEYS}}
# Keys of a first top-level object that decide a coding agent's session file, and a list
# entry's key that decides Gemini CLI's prompt log.
_AGENT_KEYS = {**{k: (codex.FORMAT, codex.LAYOUT) for k in codex.SNIFF_KEYS},
               **{k: (gemini.FORMAT, gemini.LAYOUT) for k in gemini.SNIFF_KEYS},
               codex.JSON_SESSION_KEY: (codex.FORMAT, codex.JSON_LAYOUT)}
_AGENT_ITEM_KEYS = {gemini.LOG_ENTRY_KEY: (gemini.FORMAT, gemini.LOGS_LAYOUT),
                    gemini_checkpoint.ITEM_KEY: (gemini.FORMAT, gemini_checkpoint.LAYOUT)}
AGENT_LAYOUTS = (codex.LAYOUT, codex.JSON_LAYOUT, gemini.LAYOUT, gemini.LOGS_LAYOUT,
                 gemini_checkpoint.LAYOUT, copilot_log.LAYOUT)
# Top-level keys of a Claude Code JSONL line.
_JSONL_KEYS = {"type", "uuid", "parentUuid", "sessionId", "isSidechain", "userType",
               "leafUuid", "messageId", "snapshot", "logicalParentUuid", "timestamp", "cwd"}
# Keys a Codex rollout line or a Gemini CLI recording has at the top too: not decisive alone.
_SHARED_LINE_KEYS = {"type", "timestamp", "sessionId"}


def inspect(path: Path) -> tuple[str | None, str]:
    """Run every up-front check and return (format or None if empty, layout)."""
    check_file_name(path)
    if not path.exists():
        raise ExportFormatError(f"{path}: file not found; check the path")
    if path.is_dir():
        raise ExportFormatError(f"{path}: is a folder; pass the conversations.json or the export .zip")
    if path.stat().st_size == 0:
        raise ExportFormatError(f"{path}: file is empty (0 bytes); {FIX_EXPORT}")
    with open_payload(path) as stream:
        head = stream.read(_HEAD_BYTES)
        whole = len(head) < _HEAD_BYTES
    _check_head(path, head, whole)
    if _is_zip(path):
        return _sniff(path)
    if path.suffix.lower() in JSON_LINES_SUFFIXES:
        fmt, layout = _sniff(path)
        if layout == "values":  # conversations one per line: a cut line costs that line only
            return fmt, LINES_LAYOUT
    _check_tail(path, head)
    return _sniff(path)


def check_file_name(path: Path) -> None:
    """A name with bytes that are not UTF-8 cannot be stored, indexed or printed as is: refuse
    the file by its escaped name rather than fail later somewhere far from the cause."""
    if not name_is_utf8(path):
        raise ExportFormatError(
            f"{printable_path(path)}: the file name is not valid UTF-8; rename the file "
            f"(e.g. to conversations.json) and run again")


def raw_entries(path: Path, stream: IO[bytes], layout: str) -> Iterator[RawEntry]:
    """The raw bytes of each entry; a broken outline is `ExportFormatError` naming the file
    (in a JSON-lines file each line is its own outline: `line_entries`)."""
    if layout == LINES_LAYOUT:
        yield from line_entries(stream)
        return
    try:
        yield from entries(stream, layout, _READ_BYTES)
    except StructureError as exc:
        if exc.truncated:
            raise ExportFormatError(
                f"{path}: is truncated (JSON ends early near byte {exc.offset:,}); {FIX_EXPORT}") from exc
        raise ExportFormatError(f"{path}: is not valid JSON ({exc}); {FIX_EXPORT}") from exc
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise ExportFormatError(
            f"{path}: the zip is corrupt ({exc}); download the export again") from exc


def not_utf8(path: Path, offset: int) -> ExportFormatError:
    return ExportFormatError(
        f"{path}: is not valid UTF-8 (bad byte near byte {offset:,}); re-save it as UTF-8 or "
        f"{FIX_EXPORT}")


def _is_zip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == _ZIP_MAGIC


@contextmanager
def open_payload(path: Path) -> Iterator[IO[bytes]]:
    """Binary stream of the JSON text: the file itself, or conversations.json inside the zip.
    A UTF-8 byte-order mark is consumed so parsers see JSON from the first byte."""
    if _is_zip(path):
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ExportFormatError(
                f"{path}: the zip is corrupt or truncated ({exc}); download the export again") from exc
        with archive:
            member = _find_member(path, archive)
            with archive.open(member) as stream:
                _skip_bom(stream)
                yield stream
        return
    with open(path, "rb") as stream:
        _skip_bom(stream)
        yield stream


def _skip_bom(stream: IO[bytes]) -> None:
    if stream.read(len(_BOM)) != _BOM:
        stream.seek(0)  # ZipExtFile supports seek(0) by re-reading from the start


def payload_size(path: Path) -> int:
    if _is_zip(path):
        with zipfile.ZipFile(path) as archive:
            return archive.getinfo(_find_member(path, archive)).file_size
    return path.stat().st_size


def _find_member(path: Path, archive: zipfile.ZipFile) -> str:
    names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == _MEMBER]
    if not names:
        listing = ", ".join(archive.namelist()[:5]) or "nothing"
        raise ExportFormatError(
            f"{path}: the zip has no {_MEMBER} (it holds {listing}); pass the export zip that "
            f"ChatGPT or Claude sent you, or the {_MEMBER} from it")
    return min(names, key=lambda n: (n.count("/"), n))


def _check_head(path: Path, head: bytes, whole: bool) -> None:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ExportFormatError(f"{path}: is UTF-16 encoded; re-save it as UTF-8")
    if head[:2] == b"\x1f\x8b":
        raise ExportFormatError(f"{path}: is gzip-compressed; decompress it first (gunzip)")
    # Valid JSON never holds raw control bytes (they must be escaped), so these mean binary data.
    if _CONTROL.search(head, 0, 8192) or b"\x00" in head:
        raise ExportFormatError(
            f"{path}: is a binary file, not a JSON export; pass conversations.json or the export .zip")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError as exc:
        raise ExportFormatError(
            f"{path}: is not valid UTF-8 (bad byte at offset {exc.start}); re-save it as UTF-8 "
            f"or {FIX_EXPORT}") from exc
    text = head[len(_BOM):] if head.startswith(_BOM) else head
    first = text.lstrip()[:1]
    if not first:
        raise ExportFormatError(f"{path}: contains only whitespace; {FIX_EXPORT}")
    if first not in (b"[", b"{"):
        raise ExportFormatError(
            f"{path}: is not JSON (starts with {text.lstrip()[:20]!r}); pass the conversations.json "
            f"from the export, not chat.html or another file")


def _is_session(head: bytes) -> bool:
    """Whether the first object's keys are a coding agent's session file (which can be cut off
    because it is still being written, not because a download failed)."""
    keys = {key for key, _value in top_level_fields(head.lstrip(_BOM).lstrip())}
    return bool(keys & (set(_AGENT_KEYS) | _JSONL_KEYS))


def _check_tail(path: Path, head: bytes) -> None:
    """A cut-off download rarely ends in ] or }: catch it before anything is yielded."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - 4096))
        tail = handle.read().rstrip()
    if tail[-1:] not in (b"]", b"}"):
        fix = _SESSION_FIX if _is_session(head) else FIX_EXPORT
        raise ExportFormatError(
            f"{path}: is truncated (the JSON does not end with ] or }}, last bytes "
            f"{tail[-20:]!r}); the download was cut off, {fix}")


def _sniff(path: Path) -> tuple[str | None, str]:
    """(format or None for an empty list, layout) from the first keys of the first entries."""
    with open_payload(path) as stream:
        first = stream.read(_HEAD_BYTES).lstrip()[:1]  # `_check_head` saw "[" or "{" in it
    if first == b"[":
        return _sniff_items(path, "list")
    seen: set[str] = set()  # a Claude Code line's keys decide only if nothing else follows
    with open_payload(path) as stream:
        for key in object_keys(stream):
            if key == copilot_log.SNIFF_KEYS[1] and copilot_log.SNIFF_KEYS[0] in seen:
                return copilot.FORMAT, copilot_log.LAYOUT  # {kind, v}: VS Code's session log
            if key == gemini_checkpoint.HISTORY_KEY and _history_is_list(path):
                return gemini.FORMAT, gemini_checkpoint.LAYOUT  # Open WebUI's history is an object
            if key == "conversations":
                return _sniff_items(path, "wrapper")
            if key in _DECISIVE_KEYS:
                return _DECISIVE_KEYS[key], "values"
            if key in _AGENT_KEYS:
                return _AGENT_KEYS[key]
            seen.add(key)
    if seen & (_JSONL_KEYS - _SHARED_LINE_KEYS) or {"type", "sessionId"} <= seen:
        return "claude-code", "jsonl"  # {type, sessionId}: e.g. a queue-operation line
    raise _unknown(path)


def _history_is_list(path: Path) -> bool:
    """Whether the top-level `history` field, found in the first bytes, holds a list."""
    with open_payload(path) as stream:
        head = stream.read(_HEAD_BYTES)
    return field_opener(head, gemini_checkpoint.HISTORY_KEY) == b"["


def _sniff_items(path: Path, layout: str) -> tuple[str | None, str]:
    with open_payload(path) as stream:
        seen = 0
        # A broken first entry (no tree) should not decide alone: look at a few.
        for entry in islice(raw_entries(path, stream, layout), _SNIFF_ITEMS):
            if entry.data[:1] != b"{":
                break  # the list holds something other than objects
            keys = [key for key, _value in top_level_fields(entry.data)]
            for key in keys:
                if key in _DECISIVE_KEYS:
                    return _DECISIVE_KEYS[key], layout
            for key in keys:
                if key in _ITEM_KEYS:
                    return _ITEM_KEYS[key], layout
                if key in _AGENT_ITEM_KEYS and layout == "list":
                    return _AGENT_ITEM_KEYS[key]
            seen += 1
        else:
            if not seen:
                return None, layout
    raise _unknown(path)


def _unknown(path: Path) -> ExportFormatError:
    return ExportFormatError(
        f"{path}: unknown export format (not a ChatGPT or Claude conversations.json, a Claude "
        f"Code, Codex CLI or Gemini CLI session file, an Open WebUI chat export, a Copilot Chat "
        f"export, a SpecStory (Cursor) .md session or a .md/.txt note); pass one of those files, "
        f"or name the format")
