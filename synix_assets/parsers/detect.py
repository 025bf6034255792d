"""Find out what an export file is and stream its conversations.

Contract (docs/architecture.md, "Parsers"):

* `iter_conversations` streams: `jsonscan` cuts the file into the raw bytes of each
  conversation and each is decoded on its own, so peak memory is bounded by the largest single
  conversation, not the file. Every failure that can be seen up front (missing, 0-byte, binary,
  not UTF-8, not JSON, unknown format, zip without conversations.json, a plain file whose end is
  cut off) raises `ExportFormatError` *before* the first conversation is yielded.
* The unit of failure is the conversation. A damaged one (NaN or Infinity as a date, a lone
  surrogate escape, nesting deeper than `MAX_NESTING`, JSON that does not parse, no id, no
  messages) is skipped: logged as one warning naming file, id and cause, and recorded in
  `report.skipped`. Empty conversations are skipped the same way ("empty conversation") but
  logged at info level.
* Only a file whose outline is broken (cut off, mismatched brackets between conversations, data
  after the end, bytes that are not UTF-8) is a bad file. That can only be seen when the parser
  reaches it, so `iter_conversations` may raise `ExportFormatError` after yielding some
  conversations. Callers must then treat the whole file as failed and discard what they got
  (write in one transaction, or use `parse_file`, which raises and returns nothing).
"""
from __future__ import annotations

import codecs
import logging
import zipfile
import zlib
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from synix_resources.errors import ConversationSkipped, ExportFormatError

from . import chatgpt, claude, claude_code, copilot, openwebui, textfiles
from .decode import decode_entry, entry_label
from .jsonl import read_session_lines
from .jsonscan import RawEntry, StructureError, entries, object_keys, top_level_fields
from .model import Conversation, ParseReport, name_is_utf8, printable_path, spell_surrogates

log = logging.getLogger("synix.parsers")

FORMATS = ("chatgpt", "claude", "claude-code", openwebui.FORMAT, copilot.FORMAT, *textfiles.TEXT_FORMATS)
_HEAD_BYTES = 64 * 1024
# Fewer, larger reads: the scanner's per-read cost is small, memory cost is one buffer.
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
    "created_at": "claude", "updated_at": "claude", "user_id": "openwebui",
}
# A key that only one format's entry has decides, wherever it sits among the entry's keys.
_DECISIVE_KEYS = {"mapping": "chatgpt", "chat_messages": "claude", "chat": "openwebui",
                  "history": "openwebui", **{k: copilot.FORMAT for k in copilot.SESSION_KEYS}}
# Top-level keys of a Claude Code JSONL line.
_JSONL_KEYS = {"type", "uuid", "parentUuid", "sessionId", "isSidechain", "userType",
               "leafUuid", "messageId", "snapshot", "logicalParentUuid", "timestamp", "cwd"}

_PARSERS: dict[str, Callable[[Any, str], Conversation]] = {
    "chatgpt": chatgpt.parse_conversation, "claude": claude.parse_conversation,
    openwebui.FORMAT: openwebui.parse_conversation, copilot.FORMAT: copilot.parse_session}
_IDS: dict[str, Callable[[Any], str | None]] = {
    "chatgpt": chatgpt.conversation_id, "claude": claude.conversation_id,
    openwebui.FORMAT: openwebui.conversation_id, copilot.FORMAT: copilot.conversation_id}
_ID_KEYS = {"chatgpt": chatgpt.ID_KEYS, "claude": claude.ID_KEYS,
            openwebui.FORMAT: openwebui.ID_KEYS, copilot.FORMAT: copilot.ID_KEYS}


def detect_format(path: str | Path) -> str:
    """One of `FORMATS`, from the first bytes and first conversation's keys (Markdown and text
    files: SpecStory's markers, else a note)."""
    if textfiles.is_text_source(Path(path)):
        check_file_name(Path(path))
        return textfiles.detect_text(Path(path))
    fmt, _layout = _inspect(Path(path))
    if fmt is None:
        raise ExportFormatError(
            f"{path}: the export contains no conversations, so its format cannot be told; "
            f"check you picked the right file or pass the format explicitly")
    return fmt


def iter_conversations(path: str | Path, format: str = "auto", report: ParseReport | None = None,
                       *, root: str | Path | None = None) -> Iterator[Conversation]:
    """Yield the conversations of one export file (see the module docstring for failure rules).
    `root`: the source folder the file was found in; a note's id is its path inside it."""
    path = Path(path)
    if format not in ("auto", *FORMATS):
        raise ValueError(f"format must be 'auto' or one of {FORMATS}, not {format!r}")
    if report is None:
        report = ParseReport(path=str(path), format=format)
    if textfiles.is_text_source(path):
        check_file_name(path)
        yield from textfiles.iter_text(path, format, report, root, _skip)
        return
    sniffed, layout = _inspect(path)
    if format != "auto" and sniffed is not None and sniffed != format:
        raise ExportFormatError(
            f"{path}: looks like a {sniffed} export, not {format}; pass format='{sniffed}' or 'auto'")
    fmt = sniffed if format == "auto" else format
    report.format = fmt or format
    report.bytes = _payload_size(path)
    if fmt is None:
        return  # an empty list: a valid export with nothing in it
    if layout == "jsonl":
        yield from _iter_claude_code(path, report)
        return
    parse, get_id = _PARSERS[fmt], _IDS[fmt]
    with _open_payload(path) as stream:
        for entry in _entries(path, stream, layout):
            try:
                raw = decode_entry(entry)
            except UnicodeDecodeError as exc:
                raise _not_utf8(path, entry.offset + exc.start) from exc
            except ConversationSkipped as exc:
                _skip(report, path, entry_label(entry, _ID_KEYS[fmt]), str(exc))
                continue
            conversation = _parse_one(parse, raw, get_id(raw) or f"#{entry.number}", path, report)
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
    # A damaged id or cause can hold lone surrogates: spelled out, so it can be stored and printed.
    conv_id, reason = spell_surrogates(conv_id), spell_surrogates(reason)
    report.skipped.append((conv_id, reason))
    level = logging.INFO if reason == "empty conversation" else logging.WARNING
    log.log(level, "%s: skipped conversation %s: %s", path, conv_id, reason)


def _iter_claude_code(path: Path, report: ParseReport) -> Iterator[Conversation]:
    # Sessions can interleave, so the (small) file is grouped before anything is yielded.
    with _open_payload(path) as stream:
        lines, damaged = read_session_lines(stream, str(path))
    for session in claude_code.group_sessions(lines):
        why = damaged.pop(session.session_id, None)
        if why is not None:  # a session missing a damaged line would be silently partial
            _skip(report, path, session.session_id, why)
            continue
        conversation = _parse_one(
            claude_code.parse_session, session, session.session_id, path, report)
        if conversation is not None:
            yield conversation
    for session_id, why in damaged.items():  # sessions with no readable line at all
        _skip(report, path, session_id, why)


def _entries(path: Path, stream: IO[bytes], layout: str) -> Iterator[RawEntry]:
    try:
        yield from entries(stream, layout, _READ_BYTES)
    except StructureError as exc:
        if exc.truncated:
            raise ExportFormatError(
                f"{path}: is truncated (JSON ends early near byte {exc.offset:,}); {_FIX_EXPORT}") from exc
        raise ExportFormatError(f"{path}: is not valid JSON ({exc}); {_FIX_EXPORT}") from exc
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise ExportFormatError(
            f"{path}: the zip is corrupt ({exc}); download the export again") from exc


def _not_utf8(path: Path, offset: int) -> ExportFormatError:
    return ExportFormatError(
        f"{path}: is not valid UTF-8 (bad byte near byte {offset:,}); re-save it as UTF-8 or "
        f"{_FIX_EXPORT}")


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
    return _sniff(path)


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


def _sniff(path: Path) -> tuple[str | None, str]:
    """(format or None for an empty list, layout) from the first keys of the first entries."""
    with _open_payload(path) as stream:
        first = stream.read(_HEAD_BYTES).lstrip()[:1]  # `_check_head` saw "[" or "{" in it
    if first == b"[":
        return _sniff_items(path, "list")
    line_keys = False  # a Claude Code line's keys: decide only if no decisive key follows
    with _open_payload(path) as stream:
        for key in object_keys(stream):
            if key == "conversations":
                return _sniff_items(path, "wrapper")
            if key in _DECISIVE_KEYS:
                return _DECISIVE_KEYS[key], "values"
            line_keys = line_keys or key in _JSONL_KEYS
    if line_keys:
        return "claude-code", "jsonl"
    raise _unknown(path)


def _sniff_items(path: Path, layout: str) -> tuple[str | None, str]:
    with _open_payload(path) as stream:
        seen = 0
        # A broken first entry (no tree) should not decide alone: look at a few.
        for entry in islice(_entries(path, stream, layout), _SNIFF_ITEMS):
            if entry.data[:1] != b"{":
                break  # the list holds something other than objects
            keys = [key for key, _value in top_level_fields(entry.data)]
            for key in keys:
                if key in _DECISIVE_KEYS:
                    return _DECISIVE_KEYS[key], layout
            for key in keys:
                if key in _ITEM_KEYS:
                    return _ITEM_KEYS[key], layout
            seen += 1
        else:
            if not seen:
                return None, layout
    raise _unknown(path)


def _unknown(path: Path) -> ExportFormatError:
    return ExportFormatError(
        f"{path}: unknown export format (not a ChatGPT or Claude conversations.json, a Claude "
        f"Code session .jsonl, an Open WebUI chat export or a Copilot Chat export); pass one of "
        f"those files, or name the format")
