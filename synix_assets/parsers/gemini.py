"""Gemini CLI chat recordings (`~/.gemini/tmp/<projectHash>/chats/session-*.json`) and the
project's prompt log (`logs.json`) → conversations (export-formats.md §7).

A recording is one JSON object per session, rewritten on every update: `{sessionId,
projectHash, startTime, lastUpdated, messages[]}`. Messages are `user` or `gemini`; a `gemini`
message carries its own tool calls with their results (`toolCalls[{name, args, result[
{functionResponse{response{output}}}], status}]`) and its `thoughts` (`[{subject, description}]`).

Choices (the Claude Code parser's, see render.py): a `gemini` message is one assistant message —
its text, then one `[tool use: NAME] {args}` line per call; the calls' results follow as one tool
message (`[tool result] …`, `(error)` / `(cancelled)` by status), clipped to one line. Thoughts
are kept as `subject: description` in the assistant message's metadata `thinking`, never in the
text (a thought-only message hands them to the next answer). CLI notices (`info`, `error`,
`warning`) and repeated message ids (first kept) are counted in `metadata["not_in_transcript"]`.

`logs.json` is a JSON array of prompts `{sessionId, messageId, type: "user", message,
timestamp}` that may mix sessions: each session becomes a prompts-only conversation with the
session's id, so when its recording exists the merge keeps the fuller recording (same id, later
`updated_at`), and prompts whose recording was deleted still reach memory.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from synix_resources.errors import ConversationSkipped

from . import render
from .decode import decode_entry, entry_label
from .jsonscan import RawEntry, top_level_fields
from .model import Conversation, Message, checked_time, entry_problem, text_or_none

FORMAT = "gemini-cli"
LAYOUT = "gemini"  # one session object per file
LOGS_LAYOUT = "gemini-logs"  # a list of prompts, grouped by session
# Top-level keys of a recording that no other supported format has there.
SNIFF_KEYS = frozenset({"projectHash", "startTime", "lastUpdated"})
# A key of a logs.json entry that decides the format (a list of these).
LOG_ENTRY_KEY = "messageId"
ID_KEYS = ("sessionId",)
_NOTICES = {"info", "error", "warning"}


def load_sessions(entries: Iterable[RawEntry]) -> Iterator[tuple[str, Any]]:
    """(session id, the decoded recording or why it cannot be read) per top-level value."""
    for entry in entries:
        try:
            value = decode_entry(entry)
        except ConversationSkipped as exc:
            yield entry_label(entry, ID_KEYS), str(exc)
            continue
        found = text_or_none(value.get("sessionId")) if isinstance(value, dict) else None
        yield found or f"#{entry.number}", value


def parse_session(raw: Any, source_path: str) -> Conversation:
    if isinstance(raw, str):  # the reason `load_sessions` could not decode it
        raise ConversationSkipped(raw)
    if not isinstance(raw, dict):
        raise ConversationSkipped(f"the recording is a {type(raw).__name__}, not an object")
    session_id = text_or_none(raw.get("sessionId")) or Path(source_path).stem
    raw_messages = raw.get("messages")
    if not isinstance(raw_messages, list):
        raise ConversationSkipped("the recording has no messages list")
    messages: list[Message] = []
    counts: dict[str, int] = {}
    seen: set = set()
    pending: list[str] = []
    models: list[str] = []
    for number, msg in enumerate(raw_messages, start=1):
        if not isinstance(msg, dict):
            _count(counts, "malformed message")
            continue
        msg_id = text_or_none(msg.get("id")) or f"message-{number}"
        if msg_id in seen:
            _count(counts, "repeated message id")
            continue
        seen.add(msg_id)
        kind = msg.get("type")
        when = checked_time(msg.get("timestamp"), f"timestamp of message {msg_id}")
        text = _text(msg.get("content"))
        if kind == "user":
            if text.strip():
                messages.append(Message(msg_id, "user", "user", when, text.strip()))
            else:
                _count(counts, "empty user message")
        elif kind in ("gemini", "model"):
            pending += _thoughts(msg.get("thoughts"))
            if isinstance(msg.get("model"), str):
                models.append(msg["model"])
            _gemini(messages, counts, msg_id, when, text, msg.get("toolCalls"), pending)
        else:
            _count(counts, f"{kind} notice" if kind in _NOTICES else f"{kind} message")
    if pending:
        counts["thoughts after the last answer"] = len(pending)
    if not messages:
        raise ConversationSkipped("empty conversation")
    first_user = next((m.text for m in messages if m.role == "user"), "")
    metadata: dict[str, Any] = {"not_in_transcript": dict(sorted(counts.items()))}
    if isinstance(raw.get("projectHash"), str):
        metadata["project_hash"] = raw["projectHash"]
    if models:
        metadata["model"] = models[-1]
    return Conversation(
        conversation_id=session_id, title=render.clip(first_user, render.TITLE_CHARS) or None,
        created_at=checked_time(raw.get("startTime"), "startTime") or messages[0].created_at,
        updated_at=checked_time(raw.get("lastUpdated"), "lastUpdated") or messages[-1].created_at,
        source_format=FORMAT, source_path=source_path, messages=messages, metadata=metadata)


def _gemini(messages: list[Message], counts: dict, msg_id: str, when: str | None, text: str,
            calls: Any, pending: list[str]) -> None:
    uses, results = [], []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            _count(counts, "malformed tool call")
            continue
        uses.append(render.tool_use(call.get("name"), call.get("args")))
        status = call.get("status") if isinstance(call.get("status"), str) else None
        results.append(render.tool_result(
            _result_text(call.get("result"), call.get("resultDisplay")), error=status == "error",
            status=status if status not in (None, "success", "error") else None))
    lines = ([text.strip()] if text.strip() else []) + uses
    if not lines:
        if not pending:
            _count(counts, "empty model message")
        return
    message = Message(msg_id, "assistant", "assistant", when, "\n".join(lines))
    if pending:
        message.metadata["thinking"] = list(pending)
        pending.clear()
    messages.append(message)
    if results:
        messages.append(Message(f"{msg_id}:results", "tool", "tool", when, "\n".join(results)))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Gemini API parts
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _thoughts(thoughts: Any) -> list[str]:
    out = []
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, dict):
            # some descriptions start with a literal backslash-n written by the CLI
            body = str(thought.get("description") or "").replace("\\n", "\n").strip()
            subject = str(thought.get("subject") or "").strip()
            if subject or body:
                out.append(f"{subject}: {body}" if subject and body else subject or body)
    return out


def _result_text(result: Any, display: Any) -> str:
    texts = []
    for part in result if isinstance(result, list) else []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            value = response.get("output", response.get("error", response))
            texts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    if not texts and isinstance(display, str):
        texts.append(display)
    return " ".join(texts)


def _count(counts: dict, what: str) -> None:
    counts[what] = counts.get(what, 0) + 1


# --- logs.json -------------------------------------------------------------------------------

def load_logs(entries: Iterable[RawEntry]) -> Iterator[tuple[str, Any]]:
    """(session id, its prompts or the reason it cannot be read), in order of first appearance.
    A damaged entry costs its session only (found from its top-level sessionId)."""
    sessions: dict[str, list | str] = {}
    for entry in entries:
        try:
            value = decode_entry(entry)
            problem = None if isinstance(value, dict) else f"entry {entry.number} is not an object"
        except ConversationSkipped as exc:
            value, problem = None, f"entry {entry.number} {exc}"
        session = text_or_none(value.get("sessionId")) if isinstance(value, dict) else None
        session = session or _raw_session(entry) or "unknown-session"
        kept = sessions.setdefault(session, [])
        if problem is None:
            problem = entry_problem(value)
        if problem is not None:
            if isinstance(kept, list):
                sessions[session] = problem
        elif isinstance(kept, list):
            kept.append(value)
    for session, prompts in sessions.items():
        yield session, (session, prompts)


def _raw_session(entry: RawEntry) -> str | None:
    if entry.data[:1] != b"{":
        return None
    return next((v for k, v in top_level_fields(entry.data) if k == "sessionId" and v), None)


def parse_logs(raw: tuple[str, Any], source_path: str) -> Conversation:
    session_id, prompts = raw
    if isinstance(prompts, str):
        raise ConversationSkipped(prompts)
    messages, seen, counts = [], set(), {}
    for number, entry in enumerate(prompts, start=1):
        text = entry.get("message")
        key = (entry.get("messageId"), text)
        if key in seen:
            _count(counts, "repeated prompt")
            continue
        seen.add(key)
        if entry.get("type") not in (None, "user") or not isinstance(text, str) or not text.strip():
            _count(counts, f"{entry.get('type')} log entry")
            continue
        msg_id = f"log-{number}"
        messages.append(Message(msg_id, "user", "user",
                                checked_time(entry.get("timestamp"), f"timestamp of {msg_id}"), text.strip()))
    if not messages:
        raise ConversationSkipped("empty conversation")
    return Conversation(
        conversation_id=session_id, title=render.clip(messages[0].text, render.TITLE_CHARS),
        created_at=messages[0].created_at, updated_at=messages[-1].created_at,
        source_format=FORMAT, source_path=source_path, messages=messages,
        metadata={"prompt_log": True, "not_in_transcript": counts})
