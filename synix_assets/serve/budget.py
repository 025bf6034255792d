"""A character budget for what an agent's tool call returns: one call must not flood its
context. A result over the budget loses the last items of its longest lists (then the ends of
its longest texts) and says in `cut` what was left out and how to get it."""
from __future__ import annotations

import functools
import json
from typing import Any, Callable

TOOL_RESULT_CHARS = 16_000  # ~4,000 tokens of JSON per tool result
TEXT_KEEP = 400             # a text cut to fit keeps at least this many characters


def size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _lists(value: Any, path: str = ""):
    """(path, list) of every non-empty list inside `value`."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _lists(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        if value:
            yield path, value
        for i, item in enumerate(value):
            yield from _lists(item, f"{path}[{i}]")


def _texts(value: Any):
    """(container, key, text) of every string inside `value`."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str):
            yield value, key, item
        else:
            yield from _texts(item)


def fit(result: Any, chars: int = TOOL_RESULT_CHARS) -> Any:
    """`result` if its JSON is within `chars`, else a copy cut to fit with `cut` saying what
    went: items from the end of the largest lists first (hits are best first), then the ends
    of the longest texts."""
    over = size(result) - chars
    if over <= 0 or not isinstance(result, dict):
        return result
    out = json.loads(json.dumps(result, ensure_ascii=False, default=str))
    dropped: dict[str, int] = {}
    note = 300  # room for the `cut` note itself
    while over + note > 0:
        found = max(((p, l) for p, l in _lists(out) if len(l) > 1), key=lambda x: size(x[1]),
                    default=None)
        if found is None:
            break
        path, items = found
        while len(items) > 1 and over + note > 0:
            over -= size(items.pop()) + 1
            dropped[path] = dropped.get(path, 0) + 1
    shortened = 0
    while over + note > 0:
        container, key, text = max(_texts(out), key=lambda t: len(t[2]), default=(None, None, ""))
        if container is None or len(text) <= TEXT_KEEP:
            break
        keep = max(TEXT_KEEP, len(text) - (over + note) - 1)
        container[key] = text[:keep] + "…"
        over -= len(text) - keep - 1
        shortened += 1
    parts = [f"{n} item{'s' if n != 1 else ''} of {path}" for path, n in dropped.items()]
    if shortened:
        parts.append(f"the end of {shortened} long text{'s' if shortened != 1 else ''}")
    out["cut"] = (f"left out to stay within {chars:,} characters: {', '.join(parts)} — ask "
                  "with a smaller limit, or read one record (get_memory, follow, lineage)")
    return out


def budgeted(tool: Callable[..., Any], chars: int = TOOL_RESULT_CHARS) -> Callable[..., Any]:
    """`tool` with its result cut to `chars` (same name, signature and docstring, which the MCP
    SDK reads for the tool's schema)."""

    @functools.wraps(tool)
    def call(*args, **kwargs):
        return fit(tool(*args, **kwargs), chars)

    return call
