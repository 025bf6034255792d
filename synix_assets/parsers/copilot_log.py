"""VS Code's newer Copilot Chat session store, `chatSessions/<sessionId>.jsonl` (and the global
`emptyWindowChatSessions/`, `transferredChatSessions/`) → one conversation per file
(export-formats.md §10.1).

The file is an operation log of the session object that `copilot.py` reads from a `.json`
export: line 1 is `{kind: 0, v: {version, sessionId, creationDate, customTitle?, requests[]}}`,
each later line changes it — `{kind: 1, k: [path], v}` sets the value at the path, `{kind: 2,
k: [path], v: [items], i?}` cuts the list at the path to `i` items (when given) and appends
`v`, `{kind: 3, k: [path]}` deletes, and another `kind: 0` starts over (a compaction). The log
is replayed in order and the final object parsed exactly as an exported session (same choices
for tools and thinking). A line that does not decode, or a change whose path does not exist,
skips the session with one line naming the line: the replayed session would be silently wrong.
"""
from __future__ import annotations

from pathlib import Path
from typing import IO, Any, Iterator

from synix_resources.errors import ConversationSkipped

from . import copilot
from .lines import read_lines
from .model import Conversation

LAYOUT = "copilot-log"
# The first line's keys: `kind` then `v` (no other supported format has a top-level `v`).
SNIFF_KEYS = ("kind", "v")
_MAX_STEPS = 64  # a path longer than this is damage, not a session field


def load(stream: IO[bytes], path: Path) -> Iterator[tuple[str, Any]]:
    """(session id, the replayed session object or why it cannot be replayed)."""
    state: Any = None
    why: str | None = None
    for line in read_lines(stream, str(path)):
        if why is not None:
            continue  # keep reading: a cut-off last line still refuses the whole file
        if line.value is None:
            why = str(line.problem)
            continue
        try:
            state = _apply(state, line.value)
        except _NotApplicable as exc:
            why = f"line {line.number}: {exc}"
    session_id = path.stem
    if isinstance(state, dict) and isinstance(state.get("sessionId"), str) and state["sessionId"]:
        session_id = state["sessionId"]
    if why is None and not isinstance(state, dict):
        why = "the log has no session object (no kind 0 line)"
    yield session_id, why if why is not None else state


def parse(raw: Any, source_path: str) -> Conversation:
    """The replayed session, parsed as an exported one (`raw` a str: why it was not replayed)."""
    if isinstance(raw, str):
        raise ConversationSkipped(raw)
    return copilot.parse_session(raw, source_path)


class _NotApplicable(Exception):
    """A change in the log that the session replayed so far cannot take."""


def _apply(state: Any, change: dict) -> Any:
    kind = change.get("kind")
    if kind == 0:
        if not isinstance(change.get("v"), dict):
            raise _NotApplicable("the session snapshot (kind 0) is not an object")
        return change["v"]
    if state is None:
        raise _NotApplicable(f"a change (kind {kind}) comes before the session snapshot")
    path = change.get("k")
    if not isinstance(path, list) or not path or len(path) > _MAX_STEPS:
        raise _NotApplicable("the change has no usable path (k)")
    if kind == 1:
        _set(_walk(state, path[:-1]), path[-1], change.get("v"))
    elif kind == 2:
        target = _walk(state, path)
        items, cut = change.get("v"), change.get("i")
        if not isinstance(target, list) or (items is not None and not isinstance(items, list)):
            raise _NotApplicable(f"the change appends to {_name(path)}, which is not a list")
        if isinstance(cut, int) and not isinstance(cut, bool):
            del target[cut:]
        target.extend(items or [])
    elif kind == 3:
        parent, last = _walk(state, path[:-1]), path[-1]
        try:
            del parent[last]
        except (KeyError, IndexError, TypeError):
            raise _NotApplicable(f"the change deletes {_name(path)}, which does not exist") from None
    else:
        raise _NotApplicable(f"unknown change kind {kind!r}")
    return state


def _walk(state: Any, path: list) -> Any:
    node = state
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            raise _NotApplicable(f"the change's path {_name(path)} does not exist") from None
    return node


def _set(parent: Any, last: Any, value: Any) -> None:
    try:
        if isinstance(parent, list) and last == len(parent):
            parent.append(value)
        else:
            parent[last] = value
    except (IndexError, TypeError):
        raise _NotApplicable(f"the change sets {last!r} on a value that has no such place") from None


def _name(path: list) -> str:
    text = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)
    return text[:80]
