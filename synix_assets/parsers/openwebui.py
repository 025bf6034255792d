"""Open WebUI chats → `Conversation` (format notes: export-formats.md §8).

An export ("Export chats") is a JSON array of rows `{id, user_id, title, chat{…}, created_at,
updated_at, archived, pinned, meta, folder_id}`; a row's `chat` (or a bare chat object, as kept
in the database) holds the messages twice: the tree `history{messages{id → message},
currentId}` and a flat `messages` list. We walk the tree from `currentId` up through `parentId`
(the branch the UI shows, like ChatGPT's `current_node`) and fall back to the flat list.

Reasoning and tool calls arrive inside the answer's Markdown as `<details type="reasoning">` and
`<details type="tool_calls" name=… arguments=… result=…>` blocks: reasoning goes to the
message's metadata (`thinking`), a tool call becomes one `[tool use: name] arguments` line and
one `[tool result] …` line (clipped), as the Claude Code parser does. Attached files are listed
as `[file: name]` lines.
"""
from __future__ import annotations

import html
import json
import re
from typing import Any

from synix_resources.errors import ConversationSkipped

from .model import Conversation, Message, checked_time, entry_id, text_or_none

FORMAT = "openwebui"
ID_KEYS = ("id",)
_DETAILS = re.compile(r"<details\b(?P<attrs>[^>]*)>(?P<body>.*?)</details>", re.S)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_SUMMARY = re.compile(r"<summary>.*?</summary>", re.S)
_ONE_LINE = 160
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


def conversation_id(raw: Any) -> str | None:
    return entry_id(raw, *ID_KEYS) or _root_message_id(raw)


def parse_conversation(raw: Any, source_path: str) -> Conversation:
    if not isinstance(raw, dict):
        raise ConversationSkipped(f"entry is a {type(raw).__name__}, not an object")
    chat = raw.get("chat") if isinstance(raw.get("chat"), dict) else raw
    conv_id = entry_id(raw, "id") or entry_id(chat, "id") or _root_message_id(raw)
    if not conv_id:
        raise ConversationSkipped("entry has no id and no messages to name it by")
    chain, metadata = _current_branch(chat)
    messages = [m for m in (_to_message(raw_msg, i, conv_id) for i, raw_msg in enumerate(chain))
                if m is not None]
    if not messages:
        raise ConversationSkipped("empty conversation")
    for key in ("models", "tags"):
        if chat.get(key):
            metadata[key] = chat[key]
    for key in ("archived", "pinned", "folder_id", "user_id"):
        if raw.get(key):
            metadata[key] = raw[key]
    meta_tags = (raw.get("meta") or {}).get("tags") if isinstance(raw.get("meta"), dict) else None
    if meta_tags:
        metadata["tags"] = meta_tags
    created = checked_time(raw.get("created_at"), "created_at") or checked_time(
        chat.get("timestamp"), "chat timestamp")
    updated = checked_time(raw.get("updated_at"), "updated_at")
    conversation = Conversation(
        conversation_id=conv_id, title=text_or_none(raw.get("title")) or text_or_none(chat.get("title")),
        created_at=created, updated_at=updated, source_format=FORMAT, source_path=source_path,
        messages=messages, metadata=metadata)
    conversation.created_at = created or conversation.first_message_at
    conversation.updated_at = updated or conversation.last_message_at
    return conversation


def _root_message_id(raw: Any) -> str | None:
    """A bare chat object's id is often "": its first message's id names it instead."""
    if not isinstance(raw, dict):
        return None
    chat = raw.get("chat") if isinstance(raw.get("chat"), dict) else raw
    flat = chat.get("messages")
    if isinstance(flat, list) and flat and isinstance(flat[0], dict) and flat[0].get("id"):
        return f"openwebui-{flat[0]['id']}"
    history = chat.get("history") if isinstance(chat.get("history"), dict) else {}
    tree = history.get("messages") if isinstance(history.get("messages"), dict) else {}
    roots = sorted(k for k, m in tree.items() if isinstance(m, dict) and not m.get("parentId"))
    return f"openwebui-{roots[0]}" if roots else None


def _current_branch(chat: dict) -> tuple[list[dict], dict]:
    metadata: dict[str, Any] = {}
    history = chat.get("history") if isinstance(chat.get("history"), dict) else {}
    tree = history.get("messages") if isinstance(history.get("messages"), dict) else {}
    tree = {k: v for k, v in tree.items() if isinstance(v, dict)}
    flat = [m for m in chat.get("messages") or [] if isinstance(m, dict)]
    if not tree:
        return flat, metadata
    leaf = history.get("currentId")
    if not (isinstance(leaf, str) and leaf in tree):
        # No shown leaf recorded: the newest message without children.
        leaves = [(m.get("timestamp") or 0, i, k) for i, (k, m) in enumerate(tree.items())
                  if not [c for c in m.get("childrenIds") or [] if c in tree]]
        leaf = max(leaves, key=lambda t: (t[0] if isinstance(t[0], (int, float)) else 0, t[1]))[2] \
            if leaves else None
        metadata["current_id_fallback"] = True
    chain: list[dict] = []
    seen: set[str] = set()
    while isinstance(leaf, str) and leaf in tree:
        if leaf in seen:
            raise ConversationSkipped(f"message tree has a parent cycle at message {leaf}")
        seen.add(leaf)
        chain.append(tree[leaf])
        leaf = tree[leaf].get("parentId")
    chain.reverse()
    dropped = len(tree) - len(chain)
    if dropped:
        metadata["dropped_messages"] = dropped
    return chain, metadata


def _to_message(raw_msg: dict, index: int, conv_id: str) -> Message | None:
    extra: dict[str, Any] = {}
    content = raw_msg.get("content")
    if isinstance(content, list):  # OpenAI-style parts
        content = "\n".join(p.get("text") or "" for p in content if isinstance(p, dict))
    text = _render(content if isinstance(content, str) else "", extra)
    files = [_file_name(f) for f in raw_msg.get("files") or []]
    text = "\n".join([text, *[f"[file: {name}]" for name in files if name]]).strip()
    if not text:
        return None
    role = _ROLES.get(str(raw_msg.get("role")), "system")
    for key, name in (("model", "model"), ("modelName", "model_name")):
        if raw_msg.get(key):
            extra[name] = raw_msg[key]
    if isinstance(raw_msg.get("usage"), dict):
        extra["usage"] = raw_msg["usage"]
    annotation = raw_msg.get("annotation")
    if isinstance(annotation, dict) and annotation.get("rating") is not None:
        extra["rating"] = annotation["rating"]
    if raw_msg.get("error"):
        extra["error"] = _clip(str(raw_msg["error"]))
    msg_id = raw_msg.get("id")
    return Message(
        message_id=str(msg_id) if msg_id else f"{conv_id}#{index + 1}", role=role, author=role,
        created_at=checked_time(raw_msg.get("timestamp"), f"timestamp of message {msg_id or index + 1}"),
        text=text, metadata=extra)


def _render(content: str, extra: dict) -> str:
    def block(match: re.Match) -> str:
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(match.group("attrs"))}
        kind = attrs.get("type")
        body = _SUMMARY.sub("", match.group("body"), count=1).strip()
        if kind == "reasoning":
            if body:
                extra.setdefault("thinking", []).append(_unquote(body))
            return ""
        if kind in ("tool_calls", "code_interpreter"):
            name = attrs.get("name") or kind
            lines = [f"[tool use: {name}] {_clip(_compact(attrs.get('arguments') or body))}".rstrip()]
            if attrs.get("result"):
                lines.append(f"[tool result] {_clip(_compact(attrs['result']))}")
            extra.setdefault("tools", []).append(name)
            return "\n" + "\n".join(lines) + "\n"
        return match.group(0)  # a <details> the user or the model wrote: content

    return _DETAILS.sub(block, content).strip()


def _unquote(body: str) -> str:
    # Open WebUI writes reasoning as a Markdown quote ("> …" on every line).
    return "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">")
                     for line in body.splitlines()).strip()


def _compact(value: str) -> str:
    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else json.dumps(decoded, ensure_ascii=False, sort_keys=True)


def _file_name(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    inner = item.get("file") if isinstance(item.get("file"), dict) else {}
    meta = inner.get("meta") if isinstance(inner.get("meta"), dict) else {}
    name = item.get("name") or inner.get("filename") or meta.get("name") or item.get("type")
    return str(name) if name else None


def _clip(text: str, limit: int = _ONE_LINE) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
