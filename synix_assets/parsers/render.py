"""How tool calls and tool results read in a transcript, the same for every coding-agent format.

The choice made first for Claude Code and kept for Codex CLI and Gemini CLI: a tool call is one
line `[tool use: NAME] {arguments as JSON}` and a result one line `[tool result] TEXT` (with
`(error)` when the tool failed), each clipped to `ONE_LINE` characters on a single line. The
transcript then says what the agent did without carrying file contents or command output that
can run to megabytes; reasoning is kept out of the text (in message metadata), as the design
asks for thinking blocks.
"""
from __future__ import annotations

import json
from typing import Any

ONE_LINE = 160
TITLE_CHARS = 80


def clip(text: str, limit: int = ONE_LINE) -> str:
    text = str(text)
    window = limit * 8  # tool outputs run to megabytes: split only what the clip can show
    if len(text) > window:
        words = text[:window].split()[:-1]  # the last word may be cut at the window's edge
        if len(" ".join(words)) >= limit:  # an exact prefix of the whole line, already too long
            return " ".join(words)[: limit - 1] + "…"
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_use(name: Any, arguments: Any) -> str:
    """`[tool use: NAME] {...}`; `arguments` is an object, or a string that may hold JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # raw text (an apply_patch body, say): shown as it is
    if isinstance(arguments, str):
        summary = arguments
    else:
        summary = json.dumps(arguments, ensure_ascii=False, sort_keys=True) if arguments else ""
    return f"[tool use: {clip(str(name or 'tool'), 60)}] {clip(summary)}".strip()


def tool_result(text: Any, *, error: bool = False, status: str | None = None) -> str:
    flag = " (error)" if error else f" ({status})" if status else ""
    return f"[tool result{flag}] {clip('' if text is None else str(text))}".strip()
