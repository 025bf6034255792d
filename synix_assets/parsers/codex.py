"""OpenAI Codex CLI / Codex app rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) →
one `Conversation` per file (export-formats.md §6).

Every line is `{timestamp, type, payload}`: `session_meta` (id, cwd, git, versions),
`turn_context` (the model), `response_item` (what the model saw and said), `event_msg` (what the
UI showed), `compacted`. Older rollouts have no envelope: a first line `{id, timestamp,
instructions, git?}`, `{"record_type": "state"}` markers and bare response items; both are read,
and so is the first CLI's single-JSON `rollout-*.json` (`load_json`).

Choices (the Claude Code parser's, see render.py):
* User turns are the `response_item` user messages that the person typed; injected context
  (AGENTS.md, `<environment_context>`, `<user_instructions>`) and `developer` messages are not
  turns. A file with no user `response_item` (the desktop app) takes its `user_message` events;
  assistant text likewise falls back to `agent_message` events. One source each, never both.
* Consecutive assistant items (text, tool calls) are one assistant message; consecutive tool
  outputs one tool message. A call reads `[tool use: NAME] {args}`, an output `[tool result] …`
  (`(error)` when the command exited non-zero), clipped to one line.
* Reasoning: readable summaries (`reasoning.summary`, or `agent_reasoning` events when the items
  hold none) go to the next assistant message's metadata `reasoning`, never into the text;
  encrypted reasoning is counted. Every record that is not part of the transcript (snapshots,
  token counts, turn contexts, …) is counted by type in `metadata["not_in_transcript"]`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from synix_resources.errors import ConversationSkipped
from synix_resources.values import HugeInt, small_int

from . import render
from .lines import read_lines
from .model import Conversation, Message, checked_time

FORMAT = "codex-cli"
LAYOUT = "codex"
# Top-level keys of a rollout's first line that no other supported format has there.
SNIFF_KEYS = frozenset({"payload", "record_type", "instructions"})
JSON_LAYOUT = "codex-json"  # the first CLI's single-JSON rollout {session, items}
JSON_SESSION_KEY = "session"
_INJECTED = ("# AGENTS.md instructions for", "<environment_context>", "<user_instructions>",
             "<INSTRUCTIONS>", "<permissions instructions>")
_REQUEST = "## My request for Codex:"
_FILE_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")
_EXIT = re.compile(r"^Process exited with code (-?\d+)\s*$", re.M)
_OUTPUT = re.compile(r"^Output:\n", re.M)
_META_KEYS = ("cwd", "originator", "cli_version", "source", "model_provider",
              "forked_from_id", "parent_thread_id")
_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


@dataclass
class Rollout:
    """What one pass over a rollout keeps: small items, not the raw lines (tool outputs are
    clipped as they are read, so memory is the transcript's size, not the file's)."""
    session_id: str
    items: list[tuple] = field(default_factory=list)  # (kind, line number, timestamp, data)
    meta: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    first_stamp: Any = None
    last_stamp: Any = None
    damaged: str | None = None
    calls: set = field(default_factory=set)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


def load(stream: IO[bytes], path: Path) -> Iterator[tuple[str, Rollout]]:
    """The file's one session, as (id, Rollout)."""
    match = _FILE_UUID.search(path.stem)
    rollout = Rollout(match.group(1) if match else path.stem)
    for line in read_lines(stream, str(path)):
        if line.value is None:
            rollout.damaged = rollout.damaged or line.problem
            continue
        _read_record(rollout, line.number, line.value)
    yield rollout.session_id, rollout


def load_json(raw: Any, path: Path) -> Iterator[tuple[str, Rollout]]:
    """A single-JSON rollout of the first (TypeScript) Codex CLI, `rollout-<date>-<uuid>.json`
    holding `{session: {timestamp, id, instructions}, items: [response items]}`, rewritten whole
    after each turn; `raw` is the decoded file, or why it could not be decoded. The items carry
    no times: the session's start dates them all."""
    match = _FILE_UUID.search(path.stem)
    rollout = Rollout(match.group(1) if match else path.stem)
    if isinstance(raw, str):
        rollout.damaged = raw
    elif not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        rollout.damaged = "the rollout has no items list"
    else:
        session = raw.get(JSON_SESSION_KEY)
        if isinstance(session, dict):
            _session_meta(rollout, session)
            rollout.first_stamp = rollout.last_stamp = session.get("timestamp")
        else:
            rollout.count("missing session")
        for number, item in enumerate(raw["items"], start=1):
            if isinstance(item, dict):
                _response_item(rollout, number, None, item)
            else:
                rollout.count("malformed item")
    yield rollout.session_id, rollout


def _read_record(r: Rollout, number: int, record: dict) -> None:
    stamp = record.get("timestamp")
    if stamp is not None:
        r.first_stamp = r.first_stamp if r.first_stamp is not None else stamp
        r.last_stamp = stamp
    kind, payload = record.get("type"), record.get("payload")
    if "payload" not in record:  # an older rollout: bare items, a meta first line, state markers
        if "record_type" in record:
            r.count("state marker")
            return
        if number == 1 or (kind is None and "instructions" in record):
            kind, payload = "session_meta", record
        else:
            kind, payload = "response_item", record
    if not isinstance(payload, dict):
        r.count(f"malformed {kind} record")
        return
    if kind == "session_meta":
        _session_meta(r, payload)
    elif kind == "turn_context":
        if isinstance(payload.get("model"), str):
            r.meta.setdefault("models", []).append(payload["model"])
        r.count("turn_context")
    elif kind == "response_item":
        _response_item(r, number, stamp, payload)
    elif kind == "event_msg":
        _event(r, number, stamp, payload)
    else:
        r.count(str(kind))


def _session_meta(r: Rollout, payload: dict) -> None:
    if "id" in r.meta:  # a resumed session can log its meta again
        r.count("repeated session_meta")
        return
    if isinstance(payload.get("id"), str) and payload["id"]:
        r.session_id = payload["id"]
    r.meta["id"] = r.session_id
    r.meta["started"] = payload.get("timestamp")
    for key in _META_KEYS:
        if isinstance(payload.get(key), str) and payload[key]:
            r.meta[key] = payload[key]
    git = payload.get("git")
    if isinstance(git, dict):
        for key, name in (("repository_url", "repository"), ("branch", "gitBranch"),
                          ("commit_hash", "commit")):
            if isinstance(git.get(key), str) and git[key]:
                r.meta[name] = git[key]


def _response_item(r: Rollout, number: int, stamp: Any, item: dict) -> None:
    kind = item.get("type")
    if kind == "message":
        role, text = item.get("role"), _content_text(item.get("content"))
        if role == "user":
            if text.lstrip().startswith(_INJECTED):
                r.count("injected context")
            elif text.strip():
                r.items.append(("user", number, stamp, text))
        elif role == "assistant":
            if text.strip():
                r.items.append(("assistant", number, stamp, text))
        else:
            r.count(f"{role} message")
    elif kind == "reasoning":
        texts = _content_texts(item.get("summary")) + _content_texts(item.get("content"))
        if texts:
            r.items.append(("reasoning", number, stamp, "\n\n".join(texts)))
        else:
            r.count("encrypted reasoning")
    elif kind in _CALLS:
        call_id = item.get("call_id") or item.get("id")
        if call_id in r.calls:
            r.count("repeated call id")
        r.calls.add(call_id)
        if kind == "web_search_call":
            line = render.tool_use("web_search", item.get("action"))
        else:
            line = render.tool_use(item.get("name"), item.get("arguments", item.get("input", item.get("action"))))
        r.items.append(("call", number, stamp, line))
    elif kind in _OUTPUTS:
        if item.get("call_id") not in r.calls:
            r.count("output without its call")
        r.items.append(("output", number, stamp, _output_line(item.get("output"))))
    else:
        r.count(str(kind))


def _event(r: Rollout, number: int, stamp: Any, event: dict) -> None:
    kind = event.get("type")
    text = event.get("message") if kind in ("user_message", "agent_message") else event.get("text")
    if kind in ("user_message", "agent_message", "agent_reasoning") and isinstance(text, str):
        if text.strip():
            r.items.append((f"event {kind}", number, stamp, text))
        return
    r.count(str(kind))


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content] if content.strip() else []
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content
            if isinstance(b, dict) and isinstance(b.get("text"), str) and b["text"].strip()]


def _content_text(content: Any) -> str:
    return "\n".join(_content_texts(content))


def _output_line(output: Any) -> str:
    """A tool output as one result line: the command's output text, `(error)` when it exited
    non-zero. 0.77 wraps it as JSON `{output, metadata{exit_code}}`; later versions put a
    `Process exited with code N` header before `Output:`."""
    code = None
    if isinstance(output, dict):
        output = output.get("content", output.get("output"))
    if isinstance(output, str) and output.startswith("{"):
        try:
            decoded = json.loads(output)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and "output" in decoded:
            meta = decoded.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            output = decoded["output"]
    if isinstance(output, str):
        exit_line = _EXIT.search(output)
        body = _OUTPUT.search(output)
        if exit_line and body:
            code, output = small_int(exit_line.group(1)), output[body.end():]
    elif output is not None:
        output = json.dumps(output, ensure_ascii=False)
    # a code too long to read as a number is no success either
    return render.tool_result(output, error=isinstance(code, HugeInt) or (isinstance(code, int) and code != 0))


def parse_rollout(r: Rollout, source_path: str) -> Conversation:
    if r.damaged:
        raise ConversationSkipped(r.damaged)
    kinds = {item[0] for item in r.items}
    user = "user" if "user" in kinds else "event user_message"
    assistant = "assistant" if "assistant" in kinds else "event agent_message"
    reasoning = "reasoning" if "reasoning" in kinds else "event agent_reasoning"
    messages: list[Message] = []
    pending: list[str] = []
    for kind, number, stamp, data in r.items:
        when = checked_time(stamp, f"timestamp of line {number}")
        if kind == reasoning:
            pending.append(data)
        elif kind == user:
            messages.append(Message(f"line-{number}", "user", "user", when, data.strip()))
        elif kind in (assistant, "call"):
            _append(messages, "assistant", number, when, data.strip())
            if pending:
                messages[-1].metadata.setdefault("reasoning", []).extend(pending)
                pending = []
        elif kind == "output":
            _append(messages, "tool", number, when, data)
        elif kind.startswith("event "):
            r.count(f"{kind[6:]} (repeats the items)")
    if pending:
        r.counts["reasoning after the last answer"] = len(pending)
    if not any(m.role in ("user", "assistant") for m in messages):
        raise ConversationSkipped("empty conversation")
    first_user = next((m.text for m in messages if m.role == "user"), "")
    request = first_user.split(_REQUEST, 1)[-1]
    metadata: dict[str, Any] = {k: v for k, v in r.meta.items() if k not in ("id", "started", "models")}
    models = r.meta.get("models") or []
    if models:
        metadata["model"] = models[-1]
    metadata["not_in_transcript"] = dict(sorted(r.counts.items()))
    created = checked_time(r.meta.get("started") or r.first_stamp, "session_meta timestamp")
    return Conversation(
        conversation_id=r.session_id, title=render.clip(request, render.TITLE_CHARS) or None,
        created_at=created or messages[0].created_at,
        updated_at=checked_time(r.last_stamp, "timestamp of the last line") or messages[-1].created_at,
        source_format=FORMAT, source_path=source_path, messages=messages, metadata=metadata)


def _append(messages: list[Message], role: str, number: int, when: str | None, text: str) -> None:
    """Add to the last message when it has the same role (one answer, one batch of results)."""
    if messages and messages[-1].role == role:
        messages[-1].text += "\n" + text
        return
    messages.append(Message(f"line-{number}", role, role, when, text))
