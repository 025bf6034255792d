"""VS Code Copilot Chat sessions ("Chat: Export Chat…" JSON, or a stored
`chatSessions/<id>.json`) → one `Conversation` per file (format notes: export-formats.md §10).

Each request is one user turn (`message.text`) and one assistant turn: the Markdown items of
`response` in order, with each tool call (`toolInvocationSerialized`, MCP or built-in) as one
`[tool use: name] input` line and one `[tool result] output` line, clipped, where it happened;
`thinking` items go to the message's metadata, as the Claude Code parser does. Bookkeeping
items (`prepareToolInvocation`, `mcpServersStarting`, `undoStop`…) carry no text. A failed or
canceled request has no answer: its status and error go to the user turn's metadata. The export
has no session id or title: `result.metadata.sessionId` (or `sessionId`) names it, else the first
request id; the title is `customTitle`, else the first prompt.
"""
from __future__ import annotations

import json
from typing import Any

from synix_resources.errors import ConversationSkipped

from .model import Conversation, Message, checked_time, text_or_none

FORMAT = "copilot-chat"
ID_KEYS = ("sessionId",)
# Top-level keys only a Copilot Chat session has (detection).
SESSION_KEYS = ("requests", "responderUsername", "requesterUsername", "initialLocation",
                "responderAvatarIconUri", "requesterAvatarIconUri")
_QUIET_KINDS = {"prepareToolInvocation", "mcpServersStarting", "undoStop", "codeblockUri",
                "textEditGroup", "confirmation", "progressMessage", "progressTaskSerialized"}
_STATES = {2: "canceled", 3: "failed"}
_ONE_LINE = 160


def conversation_id(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    requests = [r for r in raw.get("requests") or [] if isinstance(r, dict)]
    for request in requests:
        meta = (request.get("result") or {}).get("metadata") if isinstance(request.get("result"), dict) else None
        if isinstance(meta, dict) and meta.get("sessionId"):
            return str(meta["sessionId"])
    if raw.get("sessionId"):
        return str(raw["sessionId"])
    first = next((r.get("requestId") for r in requests if r.get("requestId")), None)
    return f"copilot-{first}" if first else None


def parse_session(raw: Any, source_path: str) -> Conversation:
    if not isinstance(raw, dict):
        raise ConversationSkipped(f"session is a {type(raw).__name__}, not an object")
    conv_id = conversation_id(raw)
    if not conv_id:
        raise ConversationSkipped("session has no sessionId and no request ids")
    requests = [r for r in raw.get("requests") or [] if isinstance(r, dict)]
    messages: list[Message] = []
    metadata: dict[str, Any] = {"tool": "copilot-chat"}
    models: list[str] = []
    for number, request in enumerate(requests, start=1):
        stamp = checked_time(request.get("timestamp"), f"timestamp of request {number}")
        request_id = str(request.get("requestId") or f"{conv_id}#request-{number}")
        user_meta: dict[str, Any] = {}
        status = _status(request)
        if status:
            user_meta["status"] = status[0]
            if status[1]:
                user_meta["error"] = status[1]
        attached = _attachments(request)
        prompt = _prompt(request)
        text = "\n".join([prompt, *[f"[attached: {name}]" for name in attached]]).strip()
        if text:
            messages.append(Message(message_id=request_id, role="user", author="user",
                                    created_at=stamp, text=text, metadata=user_meta))
        extra: dict[str, Any] = {}
        model = request.get("modelId")
        if isinstance(model, str) and model:
            extra["model"] = model
            if model not in models:
                models.append(model)
        answer = _render_response(request.get("response"), extra, metadata)
        if answer:
            messages.append(Message(
                message_id=str(request.get("responseId") or f"{request_id}#response"),
                role="assistant", author=_responder(raw), created_at=stamp, text=answer,
                metadata=extra))
    if not messages:
        raise ConversationSkipped("empty conversation")
    if models:
        metadata["models"] = models
    if raw.get("initialLocation"):
        metadata["location"] = raw["initialLocation"]
    title = text_or_none(raw.get("customTitle")) or _clip(
        next((m.text for m in messages if m.role == "user"), ""), 80) or None
    created = checked_time(raw.get("creationDate"), "creationDate") or messages[0].created_at
    updated = checked_time(raw.get("lastMessageDate"), "lastMessageDate") or max(
        (m.created_at for m in messages if m.created_at), default=created)
    return Conversation(conversation_id=conv_id, title=title, created_at=created, updated_at=updated,
                        source_format=FORMAT, source_path=source_path, messages=messages,
                        metadata=metadata)


def _prompt(request: dict) -> str:
    message = request.get("message")
    if isinstance(message, dict):
        if isinstance(message.get("text"), str):
            return message["text"].strip()
        parts = message.get("parts") or []
        return "".join(p.get("text") or "" for p in parts if isinstance(p, dict)).strip()
    return message.strip() if isinstance(message, str) else ""


def _attachments(request: dict) -> list[str]:
    data = request.get("variableData")
    variables = data.get("variables") if isinstance(data, dict) else None
    names = []
    for var in variables or []:
        if isinstance(var, dict) and (var.get("name") or var.get("id")):
            names.append(str(var.get("name") or var.get("id")))
    return names


def _status(request: dict) -> tuple[str, str | None] | None:
    result = request.get("result") if isinstance(request.get("result"), dict) else {}
    error = result.get("errorDetails") if isinstance(result.get("errorDetails"), dict) else None
    state = request.get("modelState")
    value = state.get("value") if isinstance(state, dict) else None
    if error:
        first_line = str(error.get("message") or "").strip().splitlines()
        return str(error.get("code") or "failed"), _clip(first_line[0]) if first_line else None
    if request.get("isCanceled") is True:
        return "canceled", None
    if value in _STATES:
        return _STATES[value], None
    return None


def _workspace(item: dict, metadata: dict) -> None:
    base = item.get("baseUri")
    if "workspace" not in metadata and isinstance(base, dict) and isinstance(base.get("path"), str):
        metadata["workspace"] = base["path"]


def _render_response(items: Any, extra: dict, metadata: dict) -> str:
    if isinstance(items, str):
        return items.strip()
    parts: list[str] = []
    markdown: list[str] = []  # consecutive Markdown items join without a separator

    def flush() -> None:
        if "".join(markdown).strip():
            parts.append("".join(markdown).strip())
        markdown.clear()

    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        if kind in (None, "markdownContent", "markdownVuln"):
            value = item.get("value")
            if isinstance(value, dict):
                value = value.get("value")
            if isinstance(value, str):
                markdown.append(value)
                _workspace(item, metadata)
            continue
        if kind == "inlineReference":
            ref = item.get("name") or _reference_name(item.get("inlineReference"))
            if ref:
                markdown.append(f"`{ref}`")
            continue
        flush()
        if kind == "thinking":
            value = item.get("value")
            if isinstance(value, list):
                value = "".join(v for v in value if isinstance(v, str))
            if isinstance(value, str) and value.strip():
                extra.setdefault("thinking", []).append(value.strip())
        elif kind in ("toolInvocationSerialized", "toolInvocation"):
            parts.extend(_tool_lines(item, extra))
        elif kind not in _QUIET_KINDS:
            unknown = metadata.setdefault("unknown_response_kinds", {})
            unknown[str(kind)] = unknown.get(str(kind), 0) + 1
    flush()
    return "\n\n".join(parts)


def _tool_lines(item: dict, extra: dict) -> list[str]:
    name = str(item.get("toolId") or item.get("toolName") or "tool")
    extra.setdefault("tools", []).append(name)
    details = item.get("resultDetails") if isinstance(item.get("resultDetails"), dict) else {}
    source = item.get("source") if isinstance(item.get("source"), dict) else {}
    if source.get("type") == "mcp":
        servers = extra.setdefault("mcp_servers", [])
        label = source.get("serverLabel") or source.get("label")
        if label and label not in servers:
            servers.append(label)
    data = details.get("input")
    if data is None and isinstance(item.get("toolSpecificData"), dict):
        data = item["toolSpecificData"].get("rawInput")
    lines = [f"[tool use: {name}] {_clip(_compact(data))}".rstrip()]
    outputs = details.get("output")
    if isinstance(outputs, list):
        texts = [o.get("value") for o in outputs if isinstance(o, dict) and isinstance(o.get("value"), str)]
        if texts:
            lines.append(f"[tool result] {_clip(' '.join(texts))}")
    elif not details:
        past = item.get("pastTenseMessage") or item.get("invocationMessage")
        said = past.get("value") if isinstance(past, dict) else past
        if isinstance(said, str) and said.strip():
            lines.append(f"[tool result] {_clip(said)}")
    return lines


def _reference_name(ref: Any) -> str | None:
    if not isinstance(ref, dict):
        return None
    uri = ref.get("uri") if isinstance(ref.get("uri"), dict) else ref
    path = uri.get("path") or uri.get("fsPath")
    if isinstance(path, str) and path:
        return path.rsplit("/", 1)[-1]
    return ref.get("name") if isinstance(ref.get("name"), str) else None


def _responder(raw: dict) -> str:
    name = raw.get("responderUsername")
    return str(name) if isinstance(name, str) and name else "assistant"


def _compact(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value not in ({}, []) else ""


def _clip(text: str, limit: int = _ONE_LINE) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
