"""Cursor's own chat store, `state.vscdb` (SQLite), read read-only → one conversation per
composer or chat tab (export-formats.md §9.1).

Cursor keeps chats in key/value tables (`key TEXT, value BLOB` holding JSON):

* `cursorDiskKV` `composerData:<composerId>` = `{composerId, name, createdAt, lastUpdatedAt (epoch
  ms), fullConversationHeadersOnly[{bubbleId, type}], modelConfig{modelName}, …}`, each message in
  its own row `bubbleId:<composerId>:<bubbleId>` = `{type: 1 (user) | 2 (assistant), text,
  createdAt (ISO), thinking{text}?, toolFormerData{name, rawArgs, result, status}?, codeBlocks[]}`;
  older composers hold the bubbles inline in `conversation[]`.
* the oldest chat panel: `ItemTable` `workbench.panel.aichat.view.aichat.chatdata` = `{tabs:
  [{tabId, chatTitle, lastSendTime?, bubbles[{type: "user" | "ai", text}]}]}`.

The file is opened with `mode=ro` (never written, never locked for writing) and rows are read one
composer at a time, so memory is one conversation. Choices (render.py's): a tool call is one
`[tool use: NAME] {args}` line in the assistant message and its result one `[tool result] …` tool
message, clipped; thinking goes to the message's metadata `thinking`. Code blocks, which the
answer text already shows, are counted in `not_in_transcript`, as are repeated or missing bubbles.
A composer whose row is damaged (not JSON, bad bytes, nested too deeply, unreadable pages) is one
skipped line; a file SQLite cannot open as a Cursor store is one failed file.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import quote

from synix_resources.errors import ConversationSkipped, ExportFormatError

from . import render
from .decode import decode_whole
from .model import Conversation, Message, ParseReport, checked_time, text_or_none

FORMAT = "cursor"
SUFFIX = ".vscdb"
_COMPOSER = "composerData:"
_CHATDATA = "workbench.panel.aichat.view.aichat.chatdata"
_FIX = "copy state.vscdb again (with Cursor closed) or pass the SpecStory .md files instead"
_ROLES = {1: "user", 2: "assistant", "user": "user", "ai": "assistant", "assistant": "assistant"}

Skip = Callable[[ParseReport, Path, str, str], None]


def is_database(path: Path) -> bool:
    return path.suffix.lower() == SUFFIX


def iter_database(path: Path, format: str, report: ParseReport, skip: Skip) -> Iterator[Conversation]:
    if format not in ("auto", FORMAT):
        raise ExportFormatError(
            f"{path}: is a Cursor database (state.vscdb), not {format}; pass format='{FORMAT}' or 'auto'")
    db = _open(path)
    try:
        report.format, report.bytes = FORMAT, path.stat().st_size
        tables = _tables(path, db)
        if "cursorDiskKV" in tables:
            for key, value in _rows(path, db, "SELECT key, value FROM cursorDiskKV WHERE key >= ? "
                                    "AND key < ? ORDER BY key", (_COMPOSER, _COMPOSER[:-1] + ";")):
                composer_id = key[len(_COMPOSER):].decode("utf-8", "backslashreplace")  # bytes: text_factory
                yield from _one(report, path, skip, composer_id,
                                lambda: _composer(db, composer_id, value, str(path)))
        if "ItemTable" in tables:
            for _key, value in _rows(path, db, "SELECT key, value FROM ItemTable WHERE key = ?", (_CHATDATA,)):
                yield from _tabs(report, path, skip, value)
    finally:
        db.close()


def check(path: Path) -> None:
    """The up-front checks alone (detection): opens, has a Cursor table."""
    db = _open(path)
    try:
        _tables(path, db)
    finally:
        db.close()


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise ExportFormatError(f"{path}: file not found; check the path")
    try:
        db = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ExportFormatError(f"{path}: cannot be opened as a SQLite database ({exc}); {_FIX}") from exc
    db.text_factory = bytes  # a value that is not UTF-8 is that conversation's problem, not the file's
    return db


def _tables(path: Path, db: sqlite3.Connection) -> set[str]:
    try:
        names = {row[0].decode("utf-8", "replace") for row in
                 db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise ExportFormatError(f"{path}: is not a readable SQLite database ({exc}); {_FIX}") from exc
    if not names & {"cursorDiskKV", "ItemTable"}:
        raise ExportFormatError(
            f"{path}: is a SQLite file without Cursor's cursorDiskKV or ItemTable table; pass "
            f"Cursor's globalStorage or workspaceStorage state.vscdb")
    return names


def _rows(path: Path, db: sqlite3.Connection, sql: str, args: tuple) -> Iterator[tuple[bytes, Any]]:
    try:
        yield from db.execute(sql, args)
    except sqlite3.Error as exc:  # the table itself is damaged: nothing after this row is readable
        raise ExportFormatError(f"{path}: its chat table cannot be read ({exc}); {_FIX}") from exc


def _one(report: ParseReport, path: Path, skip: Skip, conv_id: str,
         build: Callable[[], Conversation]) -> Iterator[Conversation]:
    try:
        conversation = build()
    except ConversationSkipped as exc:
        skip(report, path, conv_id, str(exc))
        return
    except sqlite3.Error as exc:
        skip(report, path, conv_id, f"its rows cannot be read ({exc})")
        return
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        skip(report, path, conv_id, f"malformed conversation ({type(exc).__name__}: {exc})")
        return
    report.conversations += 1
    report.messages += conversation.message_count
    yield conversation


def _decoded(value: Any, what: str) -> Any:
    data = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogatepass")
    raw = decode_whole(data)
    if isinstance(raw, str):
        raise ConversationSkipped(f"{what} {raw}")
    return raw


def _composer(db: sqlite3.Connection, composer_id: str, value: Any, source_path: str) -> Conversation:
    raw = _decoded(value, "its composerData row")
    if not isinstance(raw, dict):
        raise ConversationSkipped(f"its composerData row is a {type(raw).__name__}, not an object")
    counts: dict[str, int] = {}
    headers = raw.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        bubbles = _stored_bubbles(db, composer_id, headers, counts)
    elif isinstance(raw.get("conversation"), list):
        bubbles = raw["conversation"]
    else:
        bubbles = []
    messages = _messages(bubbles, counts)
    if not messages:
        raise ConversationSkipped("empty conversation")
    metadata: dict[str, Any] = {"tool": "cursor", "storage": "composer"}
    model = raw.get("modelConfig", {}).get("modelName") if isinstance(raw.get("modelConfig"), dict) else None
    if isinstance(model, str) and model:
        metadata["model"] = model
    for key in ("unifiedMode", "forceMode", "createdOnBranch"):
        if isinstance(raw.get(key), str) and raw[key]:
            metadata[key] = raw[key]
    metadata["not_in_transcript"] = dict(sorted(counts.items()))
    created = checked_time(raw.get("createdAt"), "createdAt") or messages[0].created_at
    first_user = next((m.text for m in messages if m.role == "user"), "")
    return Conversation(
        conversation_id=composer_id, title=text_or_none(raw.get("name")) or render.clip(first_user, render.TITLE_CHARS) or None,
        created_at=created, updated_at=checked_time(raw.get("lastUpdatedAt"), "lastUpdatedAt") or created,
        source_format=FORMAT, source_path=source_path, messages=messages, metadata=metadata)


def _stored_bubbles(db: sqlite3.Connection, composer_id: str, headers: list, counts: dict) -> list:
    bubbles, seen = [], set()
    for header in headers:
        bubble_id = header.get("bubbleId") if isinstance(header, dict) else None
        if not isinstance(bubble_id, str) or not bubble_id:
            _count(counts, "malformed bubble header")
            continue
        if bubble_id in seen:
            _count(counts, "repeated bubble id")
            continue
        seen.add(bubble_id)
        row = db.execute("SELECT value FROM cursorDiskKV WHERE key = ?",
                         (f"bubbleId:{composer_id}:{bubble_id}",)).fetchone()
        if row is None:
            _count(counts, "missing bubble")
            continue
        bubble = _decoded(row[0], f"bubble {bubble_id}")
        if isinstance(bubble, dict):
            bubble.setdefault("bubbleId", bubble_id)
        bubbles.append(bubble)
    return bubbles


def _messages(bubbles: list, counts: dict) -> list[Message]:
    messages: list[Message] = []
    seen: set = set()
    for number, bubble in enumerate(bubbles, start=1):
        if not isinstance(bubble, dict) or _ROLES.get(bubble.get("type")) is None:
            _count(counts, "malformed bubble")
            continue
        msg_id = text_or_none(bubble.get("bubbleId")) or text_or_none(bubble.get("id")) or f"bubble-{number}"
        if msg_id in seen:
            _count(counts, "repeated bubble id")
            continue
        seen.add(msg_id)
        role = _ROLES[bubble["type"]]
        when = checked_time(bubble.get("createdAt"), f"createdAt of bubble {msg_id}")
        text = bubble.get("text") if isinstance(bubble.get("text"), str) else ""
        if not text.strip() and isinstance(bubble.get("rawText"), str):
            text = bubble["rawText"]
        lines = [text.strip()] if text.strip() else []
        tool = bubble.get("toolFormerData")
        if role == "assistant" and isinstance(tool, dict):
            lines.append(render.tool_use(tool.get("name"), tool.get("rawArgs")))
        if isinstance(bubble.get("codeBlocks"), list) and bubble["codeBlocks"]:
            counts["code blocks (shown in the text)"] = counts.get("code blocks (shown in the text)", 0) + len(bubble["codeBlocks"])
        thinking = bubble.get("thinking", {}).get("text") if isinstance(bubble.get("thinking"), dict) else None
        if lines:
            message = Message(msg_id, role, role, when, "\n".join(lines))
            if isinstance(thinking, str) and thinking.strip():
                message.metadata["thinking"] = [thinking.strip()]
            messages.append(message)
        else:
            _count(counts, "thinking-only bubble" if thinking else "empty bubble")
        if role == "assistant" and isinstance(tool, dict) and tool.get("result") is not None:
            status = tool.get("status") if isinstance(tool.get("status"), str) else None
            messages.append(Message(f"{msg_id}:result", "tool", "tool", when, render.tool_result(
                tool["result"], error=status == "error",
                status=status if status not in (None, "completed", "success", "error") else None)))
    return messages


def _tabs(report: ParseReport, path: Path, skip: Skip, value: Any) -> Iterator[Conversation]:
    try:
        raw = _decoded(value, "the chat panel's row")
    except ConversationSkipped as exc:
        skip(report, path, "aichat.chatdata", str(exc))
        return
    tabs = raw.get("tabs") if isinstance(raw, dict) else None
    for number, tab in enumerate(tabs if isinstance(tabs, list) else [], start=1):
        tab_id = (text_or_none(tab.get("tabId")) if isinstance(tab, dict) else None) or f"tab-{number}"
        yield from _one(report, path, skip, tab_id, lambda: _tab(tab, tab_id, str(path)))


def _tab(tab: Any, tab_id: str, source_path: str) -> Conversation:
    if not isinstance(tab, dict) or not isinstance(tab.get("bubbles"), list):
        raise ConversationSkipped("the chat tab has no bubbles list")
    counts: dict[str, int] = {}
    messages = _messages(tab["bubbles"], counts)
    if not messages:
        raise ConversationSkipped("empty conversation")
    when = checked_time(tab.get("lastSendTime"), "lastSendTime")
    first_user = next((m.text for m in messages if m.role == "user"), "")
    title = text_or_none(tab.get("chatTitle"))
    return Conversation(
        conversation_id=tab_id, title=(title.split("\n")[0] if title else None) or render.clip(first_user, render.TITLE_CHARS) or None,
        created_at=messages[0].created_at or when, updated_at=when or messages[-1].created_at,
        source_format=FORMAT, source_path=source_path, messages=messages,
        metadata={"tool": "cursor", "storage": "chat panel", "not_in_transcript": dict(sorted(counts.items()))})


def _count(counts: dict, what: str) -> None:
    counts[what] = counts.get(what, 0) + 1
