"""Find out what an export file is and stream its conversations.

Contract (docs/architecture.md, "Parsers"):

* `iter_conversations` streams with ijson: peak memory is bounded by the largest single
  conversation, not the file. Every failure that can be seen up front (missing, 0-byte, binary,
  not UTF-8, not JSON, unknown format, zip without conversations.json, a plain file whose end is
  cut off) raises `ExportFormatError` *before* the first conversation is yielded.
* Damage in the middle of a big file can only be seen when the parser reaches it, so
  `iter_conversations` may raise `ExportFormatError` after yielding some conversations. Callers
  must then treat the whole file as failed and discard what they got (write in one transaction,
  or use `parse_file`, which raises and returns nothing).
* A malformed conversation inside a good file is skipped: logged as a warning naming its id and
  recorded in `report.skipped`. Empty conversations are skipped the same way ("empty
  conversation") but logged at info level.
"""
from __future__ import annotations

import codecs
import json
import logging
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import ijson

from synix_resources.errors import ConversationSkipped, ExportFormatError

from . import chatgpt, claude, claude_code
from .model import (MAX_NESTING, Conversation, ParseReport, entry_problem, name_is_utf8,
                    printable_path)

try:  # the C backend is ~10x faster than pure Python; fall back quietly if the wheel lacks it
    _ijson = ijson.get_backend("yajl2_c")
except ImportError:
    _ijson = ijson

log = logging.getLogger("synix.parsers")
# yajl2_c refuses or replaces escaped lone surrogates ("\udcff"); other backends may yield them.
_CHECK_TEXT = getattr(_ijson, "backend_name", "") != "yajl2_c"

FORMATS = ("chatgpt", "claude", "claude-code")
_HEAD_BYTES = 64 * 1024
# yajl re-scans a token that spans reads, so a 50 MB string costs O(size² / read size):
# 64 KB reads take ~5 s for one 50 MB message, 4 MB reads ~0.1 s. Memory cost: one buffer.
_READ_BYTES = 4 * 1024 * 1024
_SNIFF_ITEMS = 5  # conversations looked at before calling the format unknown
_BOM = codecs.BOM_UTF8
_ZIP_MAGIC = b"PK\x03\x04"
_MEMBER = "conversations.json"
_FIX_EXPORT = "export it again (ChatGPT: Settings → Data controls → Export data; Claude: Settings → Privacy → Export data)"

# A key seen in the first conversation object decides the format.
_ITEM_KEYS = {
    "mapping": "chatgpt", "current_node": "chatgpt", "conversation_id": "chatgpt",
    "create_time": "chatgpt", "update_time": "chatgpt", "moderation_results": "chatgpt",
    "default_model_slug": "chatgpt", "plugin_ids": "chatgpt",
    "chat_messages": "claude", "uuid": "claude", "account": "claude",
    "created_at": "claude", "updated_at": "claude",
}
# Top-level keys of a Claude Code JSONL line.
_JSONL_KEYS = {"type", "uuid", "parentUuid", "sessionId", "isSidechain", "userType",
               "leafUuid", "messageId", "snapshot", "logicalParentUuid", "timestamp", "cwd"}
# Claude Code line fields we keep; the rest (toolUseResult, snapshots) can be large.
_JSONL_FIELDS = ("type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "timestamp",
                 "isMeta", "isSidechain", "message", "summary", "cwd", "gitBranch", "version")
_JSONL_TYPES = {"user", "assistant", "summary"}

_PARSERS: dict[str, Callable[[Any, str], Conversation]] = {
    "chatgpt": chatgpt.parse_conversation, "claude": claude.parse_conversation}
_IDS: dict[str, Callable[[Any], str | None]] = {
    "chatgpt": chatgpt.conversation_id, "claude": claude.conversation_id}


def detect_format(path: str | Path) -> str:
    """"chatgpt" | "claude" | "claude-code", from the first bytes and first conversation's keys."""
    fmt, _layout = _inspect(Path(path))
    if fmt is None:
        raise ExportFormatError(
            f"{path}: the export contains no conversations, so its format cannot be told; "
            f"check you picked the right file or pass the format explicitly")
    return fmt


def iter_conversations(path: str | Path, format: str = "auto",
                       report: ParseReport | None = None) -> Iterator[Conversation]:
    """Yield the conversations of one export file (see the module docstring for failure rules)."""
    path = Path(path)
    if format not in ("auto", *FORMATS):
        raise ValueError(f"format must be 'auto' or one of {FORMATS}, not {format!r}")
    sniffed, layout = _inspect(path)
    if format != "auto" and sniffed is not None and sniffed != format:
        raise ExportFormatError(
            f"{path}: looks like a {sniffed} export, not {format}; pass format='{sniffed}' or 'auto'")
    fmt = sniffed if format == "auto" else format
    if report is None:
        report = ParseReport(path=str(path), format=fmt or format)
    report.format = fmt or format
    report.bytes = _payload_size(path)
    if fmt is None:
        return  # an empty list: a valid export with nothing in it
    if layout == "jsonl":
        yield from _iter_claude_code(path, report)
        return
    prefix = {"list": "item", "wrapper": "conversations.item", "object": ""}[layout]
    parse, get_id = _PARSERS[fmt], _IDS[fmt]
    with _open_payload(path) as stream:
        items = _ijson.items(stream, prefix, use_float=True, buf_size=_READ_BYTES)
        index = 0
        while True:
            try:
                raw = next(items)
            except StopIteration:
                return
            except (ijson.JSONError, UnicodeDecodeError) as exc:
                raise _json_error(path, exc, stream) from exc
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                raise ExportFormatError(
                    f"{path}: the zip is corrupt ({exc}); download the export again") from exc
            index += 1
            problem = entry_problem(raw, check_text=_CHECK_TEXT)
            if problem:
                raise _unsafe(path, f"conversation #{index}", problem)
            conversation = _parse_one(parse, raw, get_id(raw) or f"#{index}", path, report)
            if conversation is not None:
                yield conversation


def parse_file(path: str | Path, format: str = "auto") -> tuple[list[Conversation], ParseReport]:
    """All conversations of a file, or `ExportFormatError` and nothing (no partial results)."""
    report = ParseReport(path=str(path), format=format)
    conversations = list(iter_conversations(path, format, report))
    return conversations, report


def _parse_one(parse: Callable[[Any, str], Conversation], raw: Any, conv_id: str,
               path: Path, report: ParseReport) -> Conversation | None:
    try:
        conversation = parse(raw, str(path))
    except ConversationSkipped as exc:
        _skip(report, path, conv_id, str(exc))
        return None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A structurally broken entry must not sink the other conversations in the file.
        _skip(report, path, conv_id, f"malformed conversation ({type(exc).__name__}: {exc})")
        return None
    report.conversations += 1
    report.messages += conversation.message_count
    return conversation


def _skip(report: ParseReport, path: Path, conv_id: str, reason: str) -> None:
    report.skipped.append((conv_id, reason))
    level = logging.INFO if reason == "empty conversation" else logging.WARNING
    log.log(level, "%s: skipped conversation %s: %s", path, conv_id, reason)


def _iter_claude_code(path: Path, report: ParseReport) -> Iterator[Conversation]:
    # Sessions can interleave, so the (small) file is grouped before anything is yielded.
    lines = list(_read_jsonl(path))
    for session in claude_code.group_sessions(lines):
        conversation = _parse_one(
            claude_code.parse_session, session, session.session_id, path, report)
        if conversation is not None:
            yield conversation


def _read_jsonl(path: Path) -> Iterator[dict]:
    with _open_payload(path) as stream:
        for number, raw_line in enumerate(stream, start=1):
            if not raw_line.strip():
                continue
            try:
                line = json.loads(raw_line)
            except RecursionError as exc:
                raise _unsafe(path, f"line {number}",
                              f"is nested more than {MAX_NESTING} levels deep") from exc
            except UnicodeDecodeError as exc:
                raise ExportFormatError(
                    f"{path}: line {number} is not valid UTF-8; re-save the file as UTF-8") from exc
            except json.JSONDecodeError as exc:
                what = ("is cut off (truncated file)" if not raw_line.endswith(b"\n")
                        else f"is not valid JSON ({exc.msg})")
                raise ExportFormatError(
                    f"{path}: line {number} {what}; copy the session file again from "
                    f"~/.claude/projects/") from exc
            if isinstance(line, dict) and line.get("type") in _JSONL_TYPES:
                kept = {k: line[k] for k in _JSONL_FIELDS if k in line}
                problem = entry_problem(kept)
                if problem:
                    raise _unsafe(path, f"line {number}", problem)
                yield kept


def _unsafe(path: Path, where: str, problem: str) -> ExportFormatError:
    return ExportFormatError(
        f"{path}: {where} {problem} (damaged, or not a chat export); remove the file from the "
        f"exports folder or {_FIX_EXPORT}")


# --- opening and up-front checks -------------------------------------------------------------

def _inspect(path: Path) -> tuple[str | None, str]:
    """Run every up-front check and return (format or None if empty, layout)."""
    check_file_name(path)
    if not path.exists():
        raise ExportFormatError(f"{path}: file not found; check the path")
    if path.is_dir():
        raise ExportFormatError(f"{path}: is a folder; pass the conversations.json or the export .zip")
    if path.stat().st_size == 0:
        raise ExportFormatError(f"{path}: file is empty (0 bytes); {_FIX_EXPORT}")
    with _open_payload(path) as stream:
        head = stream.read(_HEAD_BYTES)
        whole = len(head) < _HEAD_BYTES
    _check_head(path, head, whole)
    if not _is_zip(path):
        _check_tail(path)
    with _open_payload(path) as stream:
        return _sniff(path, stream)


def check_file_name(path: Path) -> None:
    """A name with bytes that are not UTF-8 cannot be stored, indexed or printed as is: refuse
    the file by its escaped name rather than fail later somewhere far from the cause."""
    if not name_is_utf8(path):
        raise ExportFormatError(
            f"{printable_path(path)}: the file name is not valid UTF-8; rename the file "
            f"(e.g. to conversations.json) and run again")


def _is_zip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == _ZIP_MAGIC


@contextmanager
def _open_payload(path: Path) -> Iterator[IO[bytes]]:
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


def _payload_size(path: Path) -> int:
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
    if any(b < 0x20 and b not in (0x09, 0x0A, 0x0D) for b in head[:8192]) or b"\x00" in head:
        raise ExportFormatError(
            f"{path}: is a binary file, not a JSON export; pass conversations.json or the export .zip")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError as exc:
        raise ExportFormatError(
            f"{path}: is not valid UTF-8 (bad byte at offset {exc.start}); re-save it as UTF-8 "
            f"or {_FIX_EXPORT}") from exc
    text = head[len(_BOM):] if head.startswith(_BOM) else head
    first = text.lstrip()[:1]
    if not first:
        raise ExportFormatError(f"{path}: contains only whitespace; {_FIX_EXPORT}")
    if first not in (b"[", b"{"):
        raise ExportFormatError(
            f"{path}: is not JSON (starts with {text.lstrip()[:20]!r}); pass the conversations.json "
            f"from the export, not chat.html or another file")


def _check_tail(path: Path) -> None:
    """A cut-off download rarely ends in ] or }: catch it before anything is yielded."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - 4096))
        tail = handle.read().rstrip()
    if tail[-1:] not in (b"]", b"}"):
        raise ExportFormatError(
            f"{path}: is truncated (the JSON does not end with ] or }}, last bytes "
            f"{tail[-20:]!r}); the download was cut off, {_FIX_EXPORT}")


def _sniff(path: Path, stream: IO[bytes]) -> tuple[str | None, str]:
    top: str | None = None
    in_wrapper = False
    items_seen = 0
    try:
        for prefix, event, value in _ijson.parse(stream, multiple_values=True, use_float=True,
                                                  buf_size=_READ_BYTES):
            if top is None:
                if event not in ("start_array", "start_map"):
                    break
                top = "list" if event == "start_array" else "object"
                continue
            if top == "list":
                if prefix == "" and event == "end_array":
                    if items_seen:
                        break  # objects, but none looked like a conversation
                    return None, "list"
                if prefix == "item" and event == "map_key" and value in _ITEM_KEYS:
                    return _ITEM_KEYS[value], "list"
                if prefix == "item" and event == "end_map":
                    items_seen += 1  # a broken first entry (no tree) should not decide alone
                    if items_seen >= _SNIFF_ITEMS:
                        break
                elif prefix == "" and event != "start_map":
                    break  # the list holds something other than objects
            elif in_wrapper:
                if prefix == "conversations.item" and event == "map_key" and value in _ITEM_KEYS:
                    return _ITEM_KEYS[value], "wrapper"
                if prefix == "conversations" and event == "end_array":
                    if items_seen:
                        break
                    return None, "wrapper"
                if prefix == "conversations.item" and event == "end_map":
                    items_seen += 1
                    if items_seen >= _SNIFF_ITEMS:
                        break
            elif prefix == "" and event == "map_key":
                if value == "conversations":
                    in_wrapper = True
                elif value == "mapping":
                    return "chatgpt", "object"
                elif value == "chat_messages":
                    return "claude", "object"
                elif value in _JSONL_KEYS:
                    return "claude-code", "jsonl"
            elif prefix == "" and event == "end_map":
                break
    except (ijson.JSONError, UnicodeDecodeError) as exc:
        raise _json_error(path, exc, stream) from exc
    raise ExportFormatError(
        f"{path}: unknown export format (not a ChatGPT or Claude conversations.json, nor a "
        f"Claude Code session .jsonl); pass one of those files")


def _json_error(path: Path, exc: Exception, stream: IO[bytes]) -> ExportFormatError:
    detail = exc.args[0] if exc.args else str(exc)
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    first_line = str(detail).splitlines()[0] if str(detail) else type(exc).__name__
    where = _position(stream)
    if isinstance(exc, UnicodeDecodeError) or "UTF8" in first_line:
        return ExportFormatError(f"{path}: is not valid UTF-8{where}; re-save it as UTF-8 or {_FIX_EXPORT}")
    if "premature EOF" in first_line:
        return ExportFormatError(f"{path}: is truncated (JSON ends early{where}); {_FIX_EXPORT}")
    return ExportFormatError(f"{path}: is not valid JSON ({first_line.strip()}{where}); {_FIX_EXPORT}")


def _position(stream: IO[bytes]) -> str:
    try:
        return f" near byte {stream.tell():,}"
    except (OSError, ValueError):
        return ""
