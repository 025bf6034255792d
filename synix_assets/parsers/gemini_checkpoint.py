"""Gemini CLI `/chat save <tag>` checkpoints (`~/.gemini/tmp/<projectHash>/checkpoint-<tag>.json`)
→ one conversation per file (export-formats.md §7.1).

The file is the chat history the CLI sends to the model: Gemini API `Content` objects
`{role: "user" | "model", parts[]}`. Older CLIs wrote the bare list; newer ones write
`{history: [...], authType?}` (gemini-cli `Logger.saveCheckpoint` / `loadCheckpoint`, which reads
both). A part is `{text}` (with `thought: true` when it is the model's thinking),
`{functionCall {name, args}}`, `{functionResponse {name, response}}`, `{inlineData}`,
`{fileData}`, `{executableCode}` or `{codeExecutionResult}`.

Choices (gemini.py's, see render.py): a `model` content is one assistant message — its text, then
one `[tool use: NAME] {args}` line per call; thought parts go to its metadata `thinking`, never the
text. A `user` content holding function responses is a tool message (`[tool result] …`, clipped to
one line); its text parts are the person's prompt. Attachments read `[attachment: mime type]`.
There are no message times or ids in a checkpoint: ids are `<n>` by position, and the file's
modification time dates the conversation (recorded as `date_source`). The id is
`<projectHash>/checkpoint-<tag>` (the folder and file name), so re-saving a tag replaces it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from synix_resources.errors import ConversationSkipped
from synix_resources.values import utc_iso

from . import render
from .model import Conversation, Message

FORMAT = "gemini-cli"
LAYOUT = "gemini-checkpoint"
# The key of a list entry (a `Content`) that tells a checkpoint from the other JSON lists.
ITEM_KEY = "parts"
# The key of the newer wrapper object whose value is the history list.
HISTORY_KEY = "history"


def checkpoint_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}" if path.parent.name else path.stem


def parse_checkpoint(raw: Any, source_path: str) -> Conversation:
    """`raw`: the decoded file (a list, or `{history: [...]}`), or why it could not be decoded."""
    if isinstance(raw, str):
        raise ConversationSkipped(raw)
    history = raw.get(HISTORY_KEY) if isinstance(raw, dict) else raw
    if not isinstance(history, list):
        raise ConversationSkipped("the checkpoint has no history list")
    path = Path(source_path)
    messages: list[Message] = []
    counts: dict[str, int] = {}
    for number, content in enumerate(history, start=1):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            _count(counts, "malformed content")
            continue
        role = content.get("role")
        if role == "model":
            _model(messages, counts, str(number), content["parts"])
        elif role == "user":
            _user(messages, counts, str(number), content["parts"])
        else:
            _count(counts, f"{role} content")
    if not messages:
        raise ConversationSkipped("empty conversation")
    try:
        created = utc_iso(path.stat().st_mtime)
    except OSError:
        created = None
    first_user = next((m.text for m in messages if m.role == "user"), "")
    tag = unquote(path.stem.removeprefix("checkpoint-"))
    metadata: dict[str, Any] = {"checkpoint_tag": tag, "project_hash": path.parent.name,
                                "not_in_transcript": dict(sorted(counts.items()))}
    if created:
        metadata["date_source"] = "file modification time"
    if isinstance(raw, dict) and isinstance(raw.get("authType"), str):
        metadata["auth_type"] = raw["authType"]
    return Conversation(
        conversation_id=checkpoint_id(path), title=render.clip(first_user, render.TITLE_CHARS) or tag or None,
        created_at=created, updated_at=created, source_format=FORMAT, source_path=source_path,
        messages=messages, metadata=metadata)


def _user(messages: list[Message], counts: dict, msg_id: str, parts: list) -> None:
    texts, results = [], []
    for part in parts:
        if not isinstance(part, dict):
            _count(counts, "malformed part")
        elif isinstance(part.get("functionResponse"), dict):
            results.append(_result(part["functionResponse"]))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            texts.append(_other(part, counts))
    text = "\n".join(t for t in texts if t.strip()).strip()
    if text:
        messages.append(Message(msg_id, "user", "user", None, text))
    if results:
        messages.append(Message(f"{msg_id}:results" if text else msg_id, "tool", "tool", None,
                                "\n".join(results)))
    if not text and not results:
        _count(counts, "empty user content")


def _model(messages: list[Message], counts: dict, msg_id: str, parts: list) -> None:
    texts, uses, thinking = [], [], []
    for part in parts:
        if not isinstance(part, dict):
            _count(counts, "malformed part")
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            uses.append(render.tool_use(call.get("name"), call.get("args")))
        elif isinstance(part.get("text"), str):
            (thinking if part.get("thought") is True else texts).append(part["text"].strip())
        else:
            texts.append(_other(part, counts))
    lines = [t for t in texts if t] + uses
    if not lines:
        if thinking:
            _count(counts, "thought-only model content")
        else:
            _count(counts, "empty model content")
        return
    message = Message(msg_id, "assistant", "assistant", None, "\n".join(lines))
    if thinking:
        message.metadata["thinking"] = [t for t in thinking if t]
    messages.append(message)


def _result(response: dict) -> str:
    value = response.get("response")
    if isinstance(value, dict):
        value = value.get("output", value.get("error", value))
    error = isinstance(response.get("response"), dict) and "error" in response["response"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return render.tool_result(text, error=error)


def _other(part: dict, counts: dict) -> str:
    """An attachment or code-execution part, in one readable line."""
    for key in ("inlineData", "fileData"):
        if isinstance(part.get(key), dict):
            data = part[key]
            where = f" {data['fileUri']}" if isinstance(data.get("fileUri"), str) else ""
            return f"[attachment: {render.clip(str(data.get('mimeType') or 'file'), 60)}{render.clip(where, 100)}]"
    if isinstance(part.get("executableCode"), dict):
        return render.tool_use("executableCode", part["executableCode"].get("code"))
    if isinstance(part.get("codeExecutionResult"), dict):
        return render.tool_result(part["codeExecutionResult"].get("output"))
    _count(counts, "unknown part")
    return ""


def _count(counts: dict, what: str) -> None:
    counts[what] = counts.get(what, 0) + 1
