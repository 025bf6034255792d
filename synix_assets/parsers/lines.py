"""The decoded lines of a session file written one JSON object per line while the tool runs
(Codex CLI rollouts), with the same failure rules as every parser.

A line that does not decode (JSON that does not parse, nesting deeper than `MAX_NESTING`, a lone
surrogate escape) makes the session unreadable: building it without that line would be silently
partial, so the caller skips the session with one line naming the line and the cause. A last line
without its newline is a session still being written (or a file copied half-way): the file is
refused (`ExportFormatError`) before anything is yielded, and read again once it is complete.
Bytes that are not UTF-8 are the file's fault too.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Iterator

from synix_resources.errors import ExportFormatError
from synix_resources.values import load_json

from .model import MAX_NESTING, entry_problem

STILL_WRITING = ("the session is still being written or was copied half-way; it is read again "
                 "once the line is complete")


@dataclass
class Line:
    number: int
    value: dict | None  # None when the line is damaged
    problem: str | None = None


def read_lines(stream: IO[bytes], name: str) -> Iterator[Line]:
    """Each non-blank line, decoded. The caller decides what a damaged line costs."""
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ExportFormatError(
                f"{name}: line {number} is not valid UTF-8; the file is damaged, copy it again") from exc
        try:
            value = load_json(text)
        except RecursionError:
            yield Line(number, None, f"line {number} is nested more than {MAX_NESTING} levels deep")
            continue
        except json.JSONDecodeError as exc:
            if not raw.endswith(b"\n"):
                raise ExportFormatError(f"{name}: line {number} is cut off; {STILL_WRITING}") from exc
            yield Line(number, None, f"line {number} is not valid JSON ({exc.msg})")
            continue
        if not isinstance(value, dict):
            yield Line(number, None, f"line {number} is a {type(value).__name__}, not an object")
            continue
        problem = entry_problem(value)
        if problem:
            yield Line(number, None, f"line {number} {problem}")
            continue
        yield Line(number, value)
