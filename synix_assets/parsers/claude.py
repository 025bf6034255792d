"""Claude.ai `conversations.json` entries → `Conversation` (format notes: export-formats.md §2).

Messages are not stored in chronological order, so we sort by `created_at` with human-first
ties (a 2024 assistant reply carries the same stamp as the question). Newer exports link
messages with `parent_message_uuid`; then we keep only the branch ending at the newest leaf.
"""
from __future__ import annotations

import json
import re
from typing import Any

from synix_resources.errors import ConversationSkipped
from synix_resources.values import utc_iso

from .model import Conversation, Message, checked_entry_id, checked_time, entry_id, text_or_none

FORMAT = "claude"
ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"

_THINKING_TAG = re.compile(r"<antThinking>(.*?)</antThinking>", re.S)
_ARTIFACT_OPEN = re.compile(r"<antArtifact\b([^>]*)>")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
# Placeholder the export puts in `text` where an artifact was; it carries no content.
_MOBILE_PLACEHOLDER = re.compile(
    r"```\s*Viewing artifacts created via the Analysis Tool web feature preview isn.t yet "
    r"supported on mobile\.\s*```")
_ONE_LINE = 160


ID_KEYS = ("uuid", "id")


def conversation_id(raw: Any) -> str | None:
    return entry_id(raw, *ID_KEYS)


def parse_conversation(raw: Any, source_path: str) -> Conversation:
    """Parse one entry; raise `ConversationSkipped` when it cannot or should not be ingested."""
    conv_id = checked_entry_id(raw, *ID_KEYS)
    raw_messages = [m for m in raw.get("chat_messages") or [] if isinstance(m, dict)]
    metadata: dict[str, Any] = {}
    ordered = _order(raw_messages, raw.get("current_leaf_message_uuid"), metadata)

    messages = []
    for index, raw_msg in enumerate(ordered):
        message = _to_message(raw_msg, index)
        if message is not None:
            messages.append(message)
    if not messages:
        raise ConversationSkipped("empty conversation")
    if raw.get("summary"):
        metadata["summary"] = raw["summary"]
    conversation = Conversation(
        conversation_id=conv_id, title=text_or_none(raw.get("name")),
        created_at=checked_time(raw.get("created_at"), "created_at"),
        updated_at=checked_time(raw.get("updated_at"), "updated_at"),
        source_format=FORMAT, source_path=source_path, messages=messages, metadata=metadata)
    conversation.created_at = conversation.created_at or conversation.first_message_at
    conversation.updated_at = conversation.updated_at or conversation.last_message_at
    return conversation


def _sort_key(raw_msg: dict, index: int) -> tuple:
    stamp = utc_iso(raw_msg.get("created_at")) or ""
    # Full-precision string keeps microsecond order; the normalised stamp is the fallback.
    precise = raw_msg.get("created_at") if isinstance(raw_msg.get("created_at"), str) else stamp
    human_first = 0 if raw_msg.get("sender") == "human" else 1
    return (stamp, precise, human_first, index)


def _order(raw_messages: list[dict], current_leaf: Any, metadata: dict) -> list[dict]:
    ordered = [m for _, m in sorted(
        ((_sort_key(m, i), m) for i, m in enumerate(raw_messages)), key=lambda pair: pair[0])]
    by_id = {m.get("uuid"): m for m in ordered if m.get("uuid")}
    if not any(m.get("parent_message_uuid") for m in ordered):
        return ordered
    # Tree export: walk from the shown (or newest) leaf up to the root sentinel.
    parents = {m.get("parent_message_uuid") for m in ordered}
    leaf = by_id.get(current_leaf) if isinstance(current_leaf, str) else None
    if leaf is None:
        leaves = [m for m in ordered if m.get("uuid") not in parents]
        leaf = leaves[-1] if leaves else ordered[-1]
    branch, seen = [], set()
    node = leaf
    while node is not None and node.get("uuid") not in seen:
        seen.add(node.get("uuid"))
        branch.append(node)
        node = by_id.get(node.get("parent_message_uuid"))
    branch.reverse()
    metadata["dropped_messages"] = len(ordered) - len(branch)
    return branch


def _to_message(raw_msg: dict, index: int) -> Message | None:
    extra: dict[str, Any] = {}
    blocks = raw_msg.get("content")
    if isinstance(blocks, list) and blocks:
        text = _render_blocks(blocks, extra)
    else:
        text = _render_old_text(raw_msg.get("text") or "", extra)
    tail = []
    for att in raw_msg.get("attachments") or []:
        if not isinstance(att, dict):
            continue
        name = att.get("file_name") or "attachment"
        body = (att.get("extracted_content") or "").strip()
        tail.append(f"[attachment: {name}]" + (f"\n{body}" if body else ""))
        if body:
            extra.setdefault("attachment_text", []).append(name)
    for item in raw_msg.get("files") or []:
        name = item.get("file_name") if isinstance(item, dict) else None
        if name:
            tail.append(f"[file: {name}]")
    text = "\n".join(part for part in [text.strip(), *tail] if part).strip()
    if not text:
        return None
    sender = raw_msg.get("sender")
    role = "user" if sender == "human" else "assistant" if sender == "assistant" else "system"
    return Message(
        message_id=str(raw_msg.get("uuid") or f"msg-{index}"), role=role,
        author=sender or role,
        created_at=checked_time(raw_msg.get("created_at"),
                                f"created_at of message {raw_msg.get('uuid') or index + 1}"),
        text=text, metadata=extra)


def _render_blocks(blocks: list, extra: dict) -> str:
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_MOBILE_PLACEHOLDER.sub("", block.get("text") or ""))
        elif kind == "thinking":
            # With the thinking hidden, the summaries shown in the app are what is left of it.
            summaries = [s.get("summary") for s in block.get("summaries") or []
                         if isinstance(s, dict) and isinstance(s.get("summary"), str)]
            thought = block.get("thinking") or "\n".join(summaries)
            if isinstance(thought, str) and thought.strip():
                extra.setdefault("thinking", []).append(thought)
        elif kind == "tool_use":
            parts.append(_tool_use_line(block))
        elif kind == "tool_result":
            parts.append(_tool_result_line(block))
        elif isinstance(block.get("text"), str):  # unknown block that still carries text
            parts.append(block["text"])
    return "\n".join(p for p in (p.strip() for p in parts) if p)


def _tool_use_line(block: dict) -> str:
    name = block.get("name") or "tool"
    data = block.get("input") if isinstance(block.get("input"), dict) else {}
    if name == "artifacts":
        title = data.get("title") or data.get("id") or ""
        return f"[artifact {data.get('command') or 'update'}: {title} ({data.get('type') or 'text'})]"
    summary = json.dumps(data, ensure_ascii=False, sort_keys=True) if data else ""
    where = block.get("integration_name") or block.get("mcp_server_url")
    label = f"{name} ({where})" if isinstance(where, str) and where else name
    return f"[tool use: {label}] {_clip(summary)}".strip()


def _tool_result_line(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, list):
        texts = [" ".join(str(c[k]) for k in ("title", "url", "text") if c.get(k)) if c.get("type") == "knowledge"
                 else c.get("text") or c.get("title") or "" for c in content if isinstance(c, dict)]
        body = " ".join(t for t in texts if t)
    else:
        body = str(content or "")
    flag = " (error)" if block.get("is_error") else ""
    return f"[tool result: {block.get('name') or 'tool'}{flag}] {_clip(body)}".strip()


def _render_old_text(text: str, extra: dict) -> str:
    """2024 exports inline artifacts and thinking as XML-ish tags inside `text`."""
    thoughts = [t.strip() for t in _THINKING_TAG.findall(text) if t.strip()]
    if thoughts:
        extra["thinking"] = thoughts
    text = _THINKING_TAG.sub("", text)

    def artifact_header(match: re.Match) -> str:
        attrs = dict(_ATTR.findall(match.group(1)))
        return f"[artifact: {attrs.get('title') or attrs.get('identifier') or ''}]\n"

    text = _ARTIFACT_OPEN.sub(artifact_header, text).replace("</antArtifact>", "")
    return _MOBILE_PLACEHOLDER.sub("", text)


def _clip(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _ONE_LINE else line[: _ONE_LINE - 1] + "…"
