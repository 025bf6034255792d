"""ChatGPT `conversations.json` entries → `Conversation` (format notes: export-formats.md §1).

One entry is a tree (`mapping`); we ingest the branch the UI showed: walk `parent` from
`current_node` to the root. Everything here works on one already-decoded entry; streaming the
file is `detect.py`'s job.
"""
from __future__ import annotations

import json
import re
from typing import Any

from synix_resources.errors import ConversationSkipped

from .model import (ROLES, Conversation, Message, checked_entry_id, checked_time, entry_id,
                    text_or_none)

FORMAT = "chatgpt"

# Newer answers embed private-use citation markers (\ue200cite\ue202turn0search3\ue201).
_CITE_MARKER = re.compile("\ue200[^\ue201]*\ue201")
# Content types that never belong in the transcript (reasoning, saved profile/memory context).
_HIDDEN_TYPES = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}
_REASONING_CHARS = 20_000


ID_KEYS = ("conversation_id", "id")


def conversation_id(raw: Any) -> str | None:
    return entry_id(raw, *ID_KEYS)


def parse_conversation(raw: Any, source_path: str) -> Conversation:
    """Parse one entry; raise `ConversationSkipped` when it cannot or should not be ingested."""
    conv_id = checked_entry_id(raw, *ID_KEYS)
    mapping = raw.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        raise ConversationSkipped("entry has no message tree (mapping)")

    path, used_fallback = _active_path(mapping, raw.get("current_node"))
    on_path = set(path)
    metadata: dict[str, Any] = {
        "dropped_branches": sum(
            1 for nid in path for child in _children(mapping, nid) if child not in on_path),
        "dropped_messages": sum(
            1 for nid, node in mapping.items()
            if nid not in on_path and isinstance(node, dict) and node.get("message")),
    }
    if used_fallback:
        metadata["current_node_fallback"] = True
    for key in ("default_model_slug", "gizmo_id", "is_archived", "plugin_ids"):
        if raw.get(key):
            metadata[key] = raw[key]

    messages: list[Message] = []
    reasoning: list[str] = []  # thoughts and recaps wait for the answer they lead to
    for nid in path:
        raw_msg = mapping[nid].get("message")
        if _reasoning(raw_msg, reasoning):
            continue
        message = _to_message(nid, raw_msg, metadata)
        if message is not None:
            if reasoning and message.role == "assistant":
                message.metadata["thinking"], reasoning = reasoning, []
            messages.append(message)
    if reasoning:  # an interrupted turn: its reasoning led to no answer
        metadata["unanswered_reasoning"] = len(reasoning)

    created = checked_time(raw.get("create_time"), "create_time")
    updated = checked_time(raw.get("update_time"), "update_time")
    conversation = Conversation(
        conversation_id=conv_id, title=text_or_none(raw.get("title")),
        created_at=created, updated_at=updated, source_format=FORMAT,
        source_path=source_path, messages=messages, metadata=metadata)
    if not messages:
        raise ConversationSkipped("empty conversation")
    conversation.created_at = created or conversation.first_message_at
    conversation.updated_at = updated or conversation.last_message_at
    return conversation


def _children(mapping: dict, nid: str) -> list[str]:
    node = mapping.get(nid)
    kids = node.get("children") if isinstance(node, dict) else None
    return [c for c in kids or [] if c in mapping]


def _active_path(mapping: dict, current: Any) -> tuple[list[str], bool]:
    """Node ids root→leaf of the shown branch, and whether we had to guess the leaf."""
    used_fallback = not (isinstance(current, str) and current in mapping)
    leaf = _fallback_leaf(mapping) if used_fallback else current
    path: list[str] = []
    seen: set[str] = set()
    nid = leaf
    while isinstance(nid, str) and nid in mapping:
        if nid in seen:
            raise ConversationSkipped(f"message tree has a parent cycle at node {nid}")
        seen.add(nid)
        path.append(nid)
        node = mapping[nid]
        if not isinstance(node, dict):
            raise ConversationSkipped(f"node {nid} is not an object")
        nid = node.get("parent")
    path.reverse()
    return path, used_fallback


def _fallback_leaf(mapping: dict) -> str:
    """`current_node` missing or dangling: newest leaf by create_time, else last child at each
    branch from the root (children are appended in creation order)."""
    leaves = [nid for nid in mapping if not _children(mapping, nid)]
    timed = []
    for order, nid in enumerate(leaves):
        msg = (mapping[nid] or {}).get("message") or {}
        stamp = msg.get("create_time") if isinstance(msg, dict) else None
        if isinstance(stamp, (int, float)):
            timed.append((stamp, order, nid))
    if timed:
        return max(timed)[2]
    roots = [nid for nid, node in mapping.items()
             if isinstance(node, dict) and node.get("parent") not in mapping]
    if not roots:
        raise ConversationSkipped("message tree has no root and no current_node")
    nid, seen = roots[0], set()
    while _children(mapping, nid) and nid not in seen:
        seen.add(nid)
        nid = _children(mapping, nid)[-1]
    return nid


def _reasoning(msg: Any, out: list[str]) -> bool:
    """A `thoughts` or `reasoning_recap` node: its text is added to `out` (it is kept in the
    answer's metadata, out of the transcript, like Claude Code's thinking). True if it was one."""
    content = msg.get("content") if isinstance(msg, dict) else None
    kind = content.get("content_type") if isinstance(content, dict) else None
    if kind == "thoughts":
        for thought in content.get("thoughts") or []:
            if isinstance(thought, dict):
                head, body = thought.get("summary") or "", thought.get("content") or ""
                text = f"{head}: {body}" if head and body else head or body
                if isinstance(text, str) and text.strip():
                    out.append(_bounded(text.strip()))
        return True
    if kind == "reasoning_recap":
        recap = content.get("content")
        if isinstance(recap, str) and recap.strip():
            out.append(f"[{recap.strip()}]")
        return True
    return False


def _bounded(text: str, limit: int = _REASONING_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _canvas(recipient: str, code: str) -> str | None:
    """A canvas (`canmore.*`) call as readable text: the document's name and content, or the
    replacements of an update, instead of the JSON the tool was sent."""
    try:
        data = json.loads(code)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    action = recipient.split(".", 1)[-1].replace("_textdoc", "")
    if data.get("content") is not None:
        kind = f" ({data['type']})" if data.get("type") else ""
        return f"[canvas {action}: {data.get('name') or 'document'}{kind}]\n{_bounded(str(data['content']))}"
    edits = [u.get("replacement") or u.get("comment") for u in
             (data.get("updates") or data.get("comments") or []) if isinstance(u, dict)]
    shown = "\n".join(str(e) for e in edits if e)
    return f"[canvas {action}]\n{_bounded(shown)}".strip()


def _to_message(nid: str, msg: Any, conv_meta: dict) -> Message | None:
    """One visible message, or None for hidden/empty/unknown nodes (counted in conv_meta)."""
    if not isinstance(msg, dict):
        return None
    author = msg.get("author") or {}
    role = author.get("role") or "tool"
    meta = msg.get("metadata") or {}
    content = msg.get("content") or {}
    ctype = content.get("content_type") or "text"

    if ctype == "user_editable_context":
        conv_meta["custom_instructions"] = {
            k: content.get(k) for k in ("user_profile", "user_instructions") if content.get(k)}
        return None
    if meta.get("user_context_message_data"):  # 2023-style custom instructions
        conv_meta["custom_instructions"] = meta["user_context_message_data"]
        return None
    if meta.get("is_visually_hidden_from_conversation") or ctype in _HIDDEN_TYPES:
        return None
    if role == "system":
        # Prompt scaffolding, hidden in the UI (2023 files lack the flag and have weight 1).
        return None

    text = _render(ctype, content, msg)
    if text is None:
        unknown = conv_meta.setdefault("unknown_content_types", {})
        unknown[ctype] = unknown.get(ctype, 0) + 1
        return None
    recipient = msg.get("recipient")
    if recipient and recipient != "all" and ctype != "code" and text.strip():  # plugin call as text
        text = f"[tool call → {recipient}]\n{text}"
    attachments = [a.get("name") for a in meta.get("attachments") or []
                   if isinstance(a, dict) and a.get("name")]
    if attachments:
        text = "\n".join([text] + [f"[attachment: {name}]" for name in attachments]).strip()
    text = _CITE_MARKER.sub("", text).strip()
    if not text:
        return None

    extra: dict[str, Any] = {"content_type": ctype}
    if meta.get("model_slug"):
        extra["model"] = meta["model_slug"]
    if msg.get("status") and msg.get("status") != "finished_successfully":
        extra["status"] = msg["status"]
    if recipient and recipient != "all":
        extra["recipient"] = recipient
    if meta.get("invoked_plugin"):
        extra["plugin"] = True
    if isinstance(meta.get("canvas"), dict):
        extra["canvas"] = {k: meta["canvas"][k] for k in ("textdoc_id", "title", "version")
                           if k in meta["canvas"]}
    return Message(
        message_id=nid, role=role if role in ROLES else "tool",
        author=author.get("name") or role,
        created_at=checked_time(msg.get("create_time"), f"create_time of message {nid}"),
        text=text, metadata=extra)


def _render(ctype: str, content: dict, msg: dict) -> str | None:
    """Readable text for one content object; None for a type we do not know."""
    if ctype in ("text", "multimodal_text"):
        return "\n".join(_part_text(p) for p in _parts(content.get("parts")))
    if ctype == "code":
        recipient = msg.get("recipient")
        code = content.get("text") or ""
        if isinstance(recipient, str) and recipient.startswith("canmore."):
            shown = _canvas(recipient, code)
            if shown is not None:
                return shown
        lang = content.get("language")
        head = f"[tool call → {recipient}]" if recipient and recipient != "all" else ""
        fence = f"```{lang if lang and lang != 'unknown' else ''}\n{code}\n```"
        return f"{head}\n{fence}".strip()
    if ctype == "execution_output":
        return f"[output]\n{content.get('text') or ''}"
    if ctype == "tether_quote":
        title = content.get("title") or content.get("domain") or ""
        url = content.get("url") or ""
        return f"[quote: {title} {url}]".replace("  ", " ") + f"\n{content.get('text') or ''}"
    if ctype == "tether_browsing_display":
        body = content.get("result") or content.get("summary") or ""
        return f"[browsing results]\n{body}" if body else ""
    if ctype == "sonic_webpage":
        return f"[web page: {content.get('title') or ''} {content.get('url') or ''}]\n" \
               f"{content.get('text') or content.get('snippet') or ''}"
    if ctype == "system_error":
        return f"[error: {content.get('name') or 'error'}] {content.get('text') or ''}"
    return None


def _parts(parts: Any) -> list:
    # `parts` is a list; a bare string is one part (iterating it would give one line per letter).
    if isinstance(parts, (str, dict)):
        return [parts]
    return parts if isinstance(parts, list) else []


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return "" if part is None else json.dumps(part, ensure_ascii=False)
    kind = part.get("content_type") or ""
    if kind == "audio_transcription":
        return part.get("text") or ""
    if "image" in kind:
        dalle = (part.get("metadata") or {}).get("dalle") if isinstance(part.get("metadata"), dict) else None
        prompt = dalle.get("prompt") if isinstance(dalle, dict) else None
        return f"[image: {_bounded(' '.join(prompt.split()), 300)}]" if isinstance(prompt, str) and prompt.strip() \
            else "[image]"
    if "audio" in kind or "video" in kind:
        return ""  # the transcription part carries the words
    if isinstance(part.get("text"), str):
        return part["text"]
    return f"[{kind or 'attachment'}]"
