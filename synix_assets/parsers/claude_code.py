"""Claude Code session transcripts (JSONL) → one `Conversation` per `sessionId` (export-formats.md §5).

Each line is an event. Messages form a tree via `parentUuid`; we keep the chain that ends at the
last message of the session. Meta lines (`isMeta`), subagent lines (`isSidechain`) and
queue/snapshot/progress events are not part of the conversation. A repeated `uuid` (resumed or
forked sessions) keeps its first occurrence.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Iterator

from synix_resources.errors import ConversationSkipped

from .jsonl import UNKNOWN_SESSION
from .model import Conversation, Message, checked_time

FORMAT = "claude-code"
_MESSAGE_TYPES = {"user", "assistant"}
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_ONE_LINE = 160


class Session:
    """Lines of one session, de-duplicated by uuid, in file order."""

    def __init__(self, session_id: str):
        self.session_id = session_id
        self.by_uuid: dict[str, dict] = {}
        self.order: list[str] = []
        self.summary: str | None = None
        self.duplicates = 0

    def add(self, line: dict) -> None:
        if line.get("type") == "summary" and line.get("summary"):
            self.summary = str(line["summary"])
            return
        uid = line.get("uuid")
        if not isinstance(uid, str):
            return  # e.g. "[Request interrupted by user]" markers: nothing can link to them
        if uid in self.by_uuid:
            self.duplicates += 1
            return
        self.by_uuid[uid] = line
        self.order.append(uid)


def group_sessions(lines: Iterable[dict]) -> Iterator[Session]:
    """Group decoded lines by sessionId, in order of first appearance."""
    sessions: dict[str, Session] = {}
    for line in lines:
        if not isinstance(line, dict):
            continue
        sid = str(line.get("sessionId") or UNKNOWN_SESSION)
        if sid not in sessions:
            sessions[sid] = Session(sid)
        sessions[sid].add(line)
    yield from sessions.values()


def _is_message(line: dict) -> bool:
    return (line.get("type") in _MESSAGE_TYPES and isinstance(line.get("message"), dict)
            and not line.get("isMeta") and not line.get("isSidechain"))


def parse_session(session: Session, source_path: str) -> Conversation:
    candidates = [uid for uid in session.order if _is_message(session.by_uuid[uid])]
    if not candidates:
        raise ConversationSkipped("empty conversation")
    # Walk from the last message; meta lines stay as links but are not rendered.
    chain, seen = [], set()
    uid: Any = candidates[-1]
    while isinstance(uid, str) and uid in session.by_uuid and uid not in seen:
        seen.add(uid)
        line = session.by_uuid[uid]
        chain.append(line)
        uid = line.get("parentUuid") or line.get("logicalParentUuid")
    chain.reverse()

    messages = []
    for line in chain:
        if _is_message(line):
            message = _to_message(line)
            if message is not None:
                messages.append(message)
    if not messages:
        raise ConversationSkipped("empty conversation")
    first_user = next((m.text for m in messages if m.role == "user"), "")
    metadata: dict[str, Any] = {"dropped_messages": len(candidates) - sum(
        1 for line in chain if _is_message(line))}
    if session.duplicates:
        metadata["duplicate_uuids"] = session.duplicates
    for key in ("cwd", "gitBranch", "version"):
        value = next((line.get(key) for line in chain if line.get(key)), None)
        if value:
            metadata[key] = value
    return Conversation(
        conversation_id=session.session_id,
        title=session.summary or _clip(first_user, 80) or None,
        created_at=messages[0].created_at, updated_at=messages[-1].created_at,
        source_format=FORMAT, source_path=source_path, messages=messages, metadata=metadata)


def _to_message(line: dict) -> Message | None:
    body = line["message"]
    content = body.get("content")
    extra: dict[str, Any] = {}
    if body.get("model"):
        extra["model"] = body["model"]
    if isinstance(content, str):
        text, only_results = _render_command(content), False
    else:
        text, only_results = _render_blocks(content or [], extra)
    if not text.strip():
        return None
    role = "assistant" if line.get("type") == "assistant" else "user"
    if only_results:
        role = "tool"  # a user line that only carries tool output is not the human speaking
    return Message(
        message_id=line["uuid"], role=role, author=role,
        created_at=checked_time(line.get("timestamp"), f"timestamp of line {line['uuid']}"),
        text=text.strip(), metadata=extra)


def _render_command(text: str) -> str:
    command = _COMMAND.search(text)
    if not command:
        return text
    args = _COMMAND_ARGS.search(text)
    arg_text = args.group(1).strip() if args else ""
    return f"[command] {command.group(1).strip()} {arg_text}".strip()


def _render_blocks(blocks: list, extra: dict) -> tuple[str, bool]:
    parts, kinds = [], set()
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        kinds.add(kind)
        if kind == "text":
            parts.append(_render_command(block.get("text") or ""))
        elif kind == "thinking":
            if block.get("thinking"):
                extra.setdefault("thinking", []).append(block["thinking"])
        elif kind == "tool_use":
            data = block.get("input")
            summary = json.dumps(data, ensure_ascii=False, sort_keys=True) if data else ""
            parts.append(f"[tool use: {block.get('name') or 'tool'}] {_clip(summary)}".strip())
        elif kind == "tool_result":
            flag = " (error)" if block.get("is_error") else ""
            parts.append(f"[tool result{flag}] {_clip(_result_text(block.get('content')))}".strip())
        elif kind == "image":
            parts.append("[image]")
    only_results = bool(kinds) and kinds <= {"tool_result"}
    return "\n".join(p for p in parts if p.strip()), only_results


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(c.get("text") or "" for c in content if isinstance(c, dict))
    return "" if content is None else str(content)


def _clip(text: str, limit: int = _ONE_LINE) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
