"""Claude Code session transcripts (JSONL) → one `Conversation` per session (export-formats.md §5, §12).

Each line is an event. Messages form a tree via `parentUuid`; we keep the chain that ends at the
last message of the session. Every line with a `uuid` is a link of that chain, whatever its type
(Claude Code 2.x parents replies on `system` and `progress` lines), but only user and assistant
lines are rendered. Meta lines (`isMeta`) and queue/snapshot/progress events are not part of the
conversation. A repeated `uuid` (resumed or forked sessions) keeps its first occurrence.

One API response is written as several lines, one content block each, all with the same
`message.id`: consecutive such lines are one assistant message. Thinking is kept in the message's
metadata (`thinking`), never in the text; thinking of a response with no text is handed to the
next answer.

Sub-agents: a sub-agent transcript (`<session>/subagents/agent-<id>.jsonl`, every line
`isSidechain` with an `agentId` and the parent's `sessionId`) is a conversation of its own,
`<sessionId>.agent-<agentId>`. Sidechain lines without an `agentId` (older versions kept them in
the main file) are left out of the main conversation. `summary` lines name the session whose
message their `leafUuid` is; those pointing at other sessions are counted, not used as titles.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Iterator

from synix_resources.errors import ConversationSkipped

from . import render
from .jsonl import UNKNOWN_SESSION
from .model import Conversation, Message, checked_time

FORMAT = "claude-code"
_MESSAGE_TYPES = {"user", "assistant"}
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


class Session:
    """Lines of one session, de-duplicated by uuid, in file order."""

    def __init__(self, session_id: str, agent: str | None = None):
        self.session_id = session_id
        self.agent = agent  # a sub-agent's id: its sidechain lines are the conversation
        self.by_uuid: dict[str, dict] = {}
        self.order: list[str] = []
        self.summary: str | None = None
        self.unresolved_summaries = 0
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


def _key(line: dict) -> tuple[str, str | None]:
    sid = str(line.get("sessionId") or UNKNOWN_SESSION)
    agent = line.get("agentId") if line.get("isSidechain") else None
    return sid, (str(agent) if agent else None)


def group_sessions(lines: Iterable[dict]) -> Iterator[Session]:
    """Group decoded lines by session (and sub-agent), in order of first appearance. Summary
    lines without a sessionId go to the session holding their `leafUuid`."""
    sessions: dict[tuple[str, str | None], Session] = {}
    summaries: list[dict] = []
    for line in lines:
        if not isinstance(line, dict):
            continue
        if line.get("type") == "summary" and not line.get("sessionId"):
            summaries.append(line)
            continue
        key = _key(line)
        if key not in sessions:
            sessions[key] = Session(key[0], key[1])
        sessions[key].add(line)
    for line in summaries:
        owner = next((s for s in sessions.values() if line.get("leafUuid") in s.by_uuid), None)
        if owner is not None and line.get("summary"):
            owner.summary = str(line["summary"])
        else:
            for session in sessions.values():
                session.unresolved_summaries += 1
    yield from sessions.values()


def _is_message(line: dict, session: Session) -> bool:
    return (line.get("type") in _MESSAGE_TYPES and isinstance(line.get("message"), dict)
            and not line.get("isMeta") and (session.agent is not None or not line.get("isSidechain")))


def parse_session(session: Session, source_path: str) -> Conversation:
    candidates = [uid for uid in session.order if _is_message(session.by_uuid[uid], session)]
    if not candidates:
        raise ConversationSkipped("empty conversation")
    # Walk from the last message; meta, system and progress lines stay as links, not rendered.
    chain, seen = [], set()
    uid: Any = candidates[-1]
    while isinstance(uid, str) and uid in session.by_uuid and uid not in seen:
        seen.add(uid)
        line = session.by_uuid[uid]
        chain.append(line)
        uid = line.get("parentUuid") or line.get("logicalParentUuid")
    shown = _with_parallel_lines(session, chain, candidates)
    messages, thinking = [], []
    for group in _responses(shown):
        message = _to_message(group, thinking)
        if message is not None:
            messages.append(message)
    if not messages:
        raise ConversationSkipped("empty conversation")
    first_user = next((m.text for m in messages if m.role == "user"), "")
    metadata: dict[str, Any] = {"dropped_messages": len(candidates) - len(shown)}
    if session.duplicates:
        metadata["duplicate_uuids"] = session.duplicates
    if session.unresolved_summaries:
        metadata["other_sessions_summaries"] = session.unresolved_summaries
    if thinking:
        metadata["thinking_after_last_answer"] = len(thinking)
    for key in ("cwd", "gitBranch", "version"):
        value = next((line.get(key) for line in chain if line.get(key)), None)
        if value:
            metadata[key] = value
    conv_id = session.session_id
    if session.agent is not None:
        conv_id, metadata["parent_session"] = f"{conv_id}.agent-{session.agent}", conv_id
        metadata["agent_id"] = session.agent
    return Conversation(
        conversation_id=conv_id,
        title=session.summary or render.clip(first_user, render.TITLE_CHARS) or None,
        created_at=messages[0].created_at, updated_at=messages[-1].created_at,
        source_format=FORMAT, source_path=source_path, messages=messages, metadata=metadata)


def _with_parallel_lines(session: Session, chain: list[dict], candidates: list[str]) -> list[dict]:
    """The chain's messages plus their parallel siblings, in file order. Parallel tool calls
    branch the tree: each result's parent is its own tool_use line and the next reply hangs
    off the last result, so the chain alone misses the response's other lines and the other
    results. Lines of an API response on the chain, and results answering its tool calls, are
    part of the conversation; a rewound branch shares neither and stays out."""
    keep = {line["uuid"] for line in chain}
    responses = {_api_id(line) for line in chain} - {None}
    calls: set[str] = set()
    for uid in candidates:
        line = session.by_uuid[uid]
        if uid in keep or _api_id(line) in responses:
            keep.add(uid)
            calls |= _block_ids(line, "tool_use", "id")
    for uid in candidates:
        if _block_ids(session.by_uuid[uid], "tool_result", "tool_use_id") & calls:
            keep.add(uid)
    return [session.by_uuid[uid] for uid in candidates if uid in keep]


def _block_ids(line: dict, kind: str, key: str) -> set[str]:
    content = line["message"].get("content")
    if not isinstance(content, list):
        return set()
    return {b[key] for b in content
            if isinstance(b, dict) and b.get("type") == kind and isinstance(b.get(key), str)}


def _responses(lines: list[dict]) -> Iterator[list[dict]]:
    """Lines grouped so that consecutive assistant lines of one API response are one group."""
    group: list[dict] = []
    for line in lines:
        api_id = _api_id(line)
        if group and api_id is not None and api_id == _api_id(group[-1]):
            group.append(line)
            continue
        if group:
            yield group
        group = [line]
    if group:
        yield group


def _api_id(line: dict) -> str | None:
    if line.get("type") != "assistant":
        return None
    value = line["message"].get("id")
    return value if isinstance(value, str) and value else None


def _to_message(group: list[dict], thinking: list[str]) -> Message | None:
    line = group[0]
    extra: dict[str, Any] = {}
    texts, only_results = [], True
    for part in group:
        body = part["message"]
        if body.get("model") and "model" not in extra:
            extra["model"] = body["model"]
        content = body.get("content")
        if isinstance(content, str):
            text, results = _render_command(content), False
        else:
            text, results = _render_blocks(content or [], thinking)
        texts.append(text)
        only_results = only_results and results
    text = "\n".join(t for t in texts if t.strip())
    if not text.strip():
        return None
    role = "assistant" if line.get("type") == "assistant" else "user"
    if only_results:
        role = "tool"  # a user line that only carries tool output is not the human speaking
    if role == "assistant" and thinking:
        extra["thinking"] = list(thinking)
        thinking.clear()
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


def _render_blocks(blocks: list, thinking: list[str]) -> tuple[str, bool]:
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
                thinking.append(block["thinking"])
        elif kind == "tool_use":
            parts.append(render.tool_use(block.get("name"), block.get("input")))
        elif kind == "tool_result":
            parts.append(render.tool_result(_result_text(block.get("content")),
                                            error=bool(block.get("is_error"))))
        elif kind == "image":
            parts.append("[image]")
    only_results = bool(kinds) and kinds <= {"tool_result"}
    return "\n".join(p for p in parts if p.strip()), only_results


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(c.get("text") or "" for c in content if isinstance(c, dict))
    return "" if content is None else str(content)
