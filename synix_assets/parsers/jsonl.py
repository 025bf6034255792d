"""The lines of a Claude Code session file (JSONL) that belong to conversations, and the
sessions that a damaged line makes unreadable.

A line that does not decode (nesting deeper than `MAX_NESTING`, JSON that does not parse), or
that holds a lone surrogate escape, costs its session only: the session would otherwise be
built with a message missing. The session is found from the line's top-level `sessionId`
without decoding the line. Bytes that are not UTF-8, and a last line cut off mid-write, are the
file's fault (`ExportFormatError`).
"""
from __future__ import annotations

import json
from typing import IO

from synix_resources.errors import ExportFormatError
from synix_resources.values import load_json

from .jsonscan import top_level_fields
from .model import MAX_NESTING, entry_problem

# Claude Code line fields we keep; the rest (toolUseResult, snapshots) can be large.
_FIELDS = ("type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "timestamp",
           "isMeta", "isSidechain", "message", "summary", "leafUuid", "cwd", "gitBranch",
           "version", "agentId")
_TYPES = {"user", "assistant", "summary"}
# Other lines (system, progress, attachment, … in Claude Code 2.x) are links of the parentUuid
# chain — a reply's parent can be a `turn_duration` system line — so their links are kept.
_LINK_FIELDS = ("type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "isSidechain",
                "agentId")
UNKNOWN_SESSION = "unknown-session"  # where lines without a sessionId are grouped
_RECOPY = "copy the session file again from ~/.claude/projects/"


def read_session_lines(stream: IO[bytes], name: str) -> tuple[list[dict], dict[str, str]]:
    """(kept fields of each conversation line, session id → why it cannot be read)."""
    lines: list[dict] = []
    damaged: dict[str, str] = {}
    for number, raw_line in enumerate(stream, start=1):
        if not raw_line.strip():
            continue
        try:
            text = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportFormatError(
                f"{name}: line {number} is not valid UTF-8; re-save the file as UTF-8") from exc
        line, problem = None, None
        try:
            line = load_json(text)
        except RecursionError:
            problem = f"is nested more than {MAX_NESTING} levels deep"
        except json.JSONDecodeError as exc:
            if not raw_line.endswith(b"\n"):
                raise ExportFormatError(
                    f"{name}: line {number} is cut off (truncated file); {_RECOPY}") from exc
            problem = f"is not valid JSON ({exc.msg})"
        if line is not None:
            if not isinstance(line, dict):
                continue
            if line.get("type") not in _TYPES:
                if not isinstance(line.get("uuid"), str):
                    continue  # e.g. file-history-snapshot: nothing links to it
                line = {k: line[k] for k in _LINK_FIELDS if k in line}
            else:
                line = {k: line[k] for k in _FIELDS if k in line}
            problem = entry_problem(line)
            if problem is None:
                lines.append(line)
                continue
        session = _session_of(line, raw_line)
        damaged.setdefault(session, f"line {number} {problem}")
    return lines, damaged


def _session_of(line: dict | None, raw_line: bytes) -> str:
    if line is not None:
        return str(line.get("sessionId") or UNKNOWN_SESSION)
    fields = dict(top_level_fields(raw_line.strip()))
    return fields.get("sessionId") or UNKNOWN_SESSION
