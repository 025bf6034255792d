"""Find out what an export file is and stream its conversations.

Contract (docs/architecture.md, "Parsers"); opening a file, the up-front checks and telling its
format live in sniff.py, Markdown and text files in textfiles.py:

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

import logging
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from synix_resources.errors import ConversationSkipped, ExportFormatError

from . import (chatgpt, claude, claude_code, codex, copilot, copilot_log, cursor_db, gemini, gemini_checkpoint,
               openwebui, textfiles)
from .decode import decode_entry, decode_whole, entry_label
from .jsonl import read_session_lines
from .model import Conversation, ParseReport, spell_surrogates
from .sniff import (AGENT_LAYOUTS, check_file_name, inspect, not_utf8, open_payload, payload_size,
                    raw_entries)

log = logging.getLogger("synix.parsers")

FORMATS = ("chatgpt", "claude", "claude-code", codex.FORMAT, gemini.FORMAT, openwebui.FORMAT,
           copilot.FORMAT, *textfiles.TEXT_FORMATS)

_PARSERS: dict[str, Callable[[Any, str], Conversation]] = {
    "chatgpt": chatgpt.parse_conversation, "claude": claude.parse_conversation,
    openwebui.FORMAT: openwebui.parse_conversation, copilot.FORMAT: copilot.parse_session}
_IDS: dict[str, Callable[[Any], str | None]] = {
    "chatgpt": chatgpt.conversation_id, "claude": claude.conversation_id,
    openwebui.FORMAT: openwebui.conversation_id, copilot.FORMAT: copilot.conversation_id}
_ID_KEYS = {"chatgpt": chatgpt.ID_KEYS, "claude": claude.ID_KEYS,
            openwebui.FORMAT: openwebui.ID_KEYS, copilot.FORMAT: copilot.ID_KEYS}


def detect_format(path: str | Path, told: str | None = None) -> str:
    """One of `FORMATS`, from the first bytes and the first conversation's (or line's) keys
    (Markdown and text files: SpecStory's markers, else a note; `.vscdb`: Cursor's SQLite store).
    `told`: the format the caller was given, taken for an export with no conversations to tell
    its format by (an empty one)."""
    if textfiles.is_text_source(path):
        check_file_name(path)
        return textfiles.detect_text(path)
    if cursor_db.is_database(Path(path)):
        check_file_name(Path(path))
        cursor_db.check(Path(path))
        return cursor_db.FORMAT
    fmt, _layout = inspect(Path(path))
    if fmt is None and told is not None:
        return told
    if fmt is None:
        raise ExportFormatError(
            f"{path}: the export contains no conversations, so its format cannot be told; "
            f"check you picked the right file or pass the format explicitly "
            f"(`synix init --format NAME`, or format= on the source)")
    return fmt


def iter_conversations(path: str | Path, format: str = "auto", report: ParseReport | None = None,
                       *, root: str | Path | None = None,
                       content: bytes | None = None) -> Iterator[Conversation]:
    """Yield the conversations of one export file (see the module docstring for failure rules).
    `root`: the source folder the file was found in; a note's id is its path inside it.
    `content`: a Markdown or text file's bytes (`textfiles.read_bytes`) when the caller
    has read them already (a source scan hashes them), so the file is read once."""
    if format != "auto" and format not in FORMATS:
        raise ValueError(f"format must be 'auto' or one of {FORMATS}, not {format!r}")
    if report is None:
        report = ParseReport(path=str(path), format=format)
    # A notes folder is many small files: a text file goes by its name, never through pathlib
    # (the name once: every check below would ask the `Path` for its string again).
    name = os.fspath(path)
    if textfiles.is_text_source(name):
        check_file_name(name)
        conversation = textfiles.parse_text(name, format, report, root, _skip, content)
        if conversation is not None:
            yield conversation
        return
    if not isinstance(path, Path):
        path = Path(path)
    if cursor_db.is_database(path):
        check_file_name(path)
        yield from cursor_db.iter_database(path, format, report, _skip)
        return
    sniffed, layout = inspect(path)
    if format != "auto" and sniffed is not None and sniffed != format:
        raise ExportFormatError(
            f"{path}: looks like a {sniffed} export, not {format}; pass format='{sniffed}' or 'auto'")
    fmt = sniffed if format == "auto" else format
    report.format = fmt or format
    report.bytes = payload_size(path)
    if fmt is None:
        return  # an empty list: a valid export with nothing in it
    if layout == "jsonl":
        yield from _iter_claude_code(path, report)
        return
    if layout in AGENT_LAYOUTS:
        yield from _iter_agent_sessions(path, layout, report)
        return
    parse, get_id = _PARSERS[fmt], _IDS[fmt]
    with open_payload(path) as stream:
        for entry in raw_entries(path, stream, layout):
            try:
                raw = decode_entry(entry)
            except UnicodeDecodeError as exc:
                raise not_utf8(path, entry.offset + exc.start) from exc
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
    with open_payload(path) as stream:
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


def _iter_agent_sessions(path: Path, layout: str, report: ParseReport) -> Iterator[Conversation]:
    """Codex CLI rollouts and Gemini CLI recordings / prompt logs / checkpoints (codex.py,
    gemini.py, gemini_checkpoint.py)."""
    with open_payload(path) as stream:
        if layout == codex.LAYOUT:
            units, parse = codex.load(stream, path), codex.parse_rollout
        elif layout == codex.JSON_LAYOUT:  # one conversation per file: read whole
            units, parse = codex.load_json(decode_whole(stream.read()), path), codex.parse_rollout
        elif layout == copilot_log.LAYOUT:
            units, parse = copilot_log.load(stream, path), copilot_log.parse
        elif layout == gemini_checkpoint.LAYOUT:
            units = [(gemini_checkpoint.checkpoint_id(path), decode_whole(stream.read()))]
            parse = gemini_checkpoint.parse_checkpoint
        elif layout == gemini.LOGS_LAYOUT:
            units, parse = gemini.load_logs(raw_entries(path, stream, "list")), gemini.parse_logs
        else:
            units, parse = gemini.load_sessions(raw_entries(path, stream, "values")), gemini.parse_session
        try:
            for conv_id, raw in units:
                conversation = _parse_one(parse, raw, conv_id, path, report)
                if conversation is not None:
                    yield conversation
        except UnicodeDecodeError as exc:
            raise not_utf8(path, exc.start) from exc
