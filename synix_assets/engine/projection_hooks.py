"""A projection's `on_update` hook (design 000 §6.1: "trigger on change"): after a build changed
a search index or rewrote a context document, and never on a no-op, the pipeline's function is
called, or its URL gets a JSON POST, with what changed:

    {"pipeline": "personal-memory", "branch": "main", "projection": "memory-index",
     "kind": "search_index", "changed": {"documents": 30, "added": 6, "updated": 0, "removed": 0, ...}}

The projection is already written when the hook runs, so a hook that fails (raises, times out,
answers with an HTTP error) does not fail the build: it is reported as one warning line and in
the projection's result (`on_update`), and the next change calls it again.
"""
from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

log = logging.getLogger("synix.projections")
TIMEOUT_S = 10.0  # a hook that hangs must not hold the build (and its project lock) for long


def notify(pipeline, branch: str, name: str, kind: str, changed: dict) -> str | None:
    """Call or POST to the projection's hook; "sent", a one-line failure, or None (no hook)."""
    hook = pipeline.on_update.get(name)
    if hook is None:
        return None
    payload = {"pipeline": pipeline.name, "branch": branch, "projection": name, "kind": kind,
               "changed": changed}
    target = hook if isinstance(hook, str) else getattr(hook, "__qualname__", repr(hook))
    try:
        if isinstance(hook, str):
            _post(hook, payload)
        else:
            hook(payload)
    # A hook is user code or someone else's server: whatever it raises is its failure, reported
    # here in one line, and the projection it reports on stays written.
    except Exception as exc:  # noqa: BLE001
        line = (f"on_update of projection '{name}' ({target}) failed: {_cause(exc)}; "
                "the projection is written and the build goes on")
        log.warning(line)
        return line
    return "sent"


def _post(url: str, payload: dict[str, Any]) -> None:
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json",
                                              "User-Agent": "synix-on-update"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        response.read()


def _cause(exc: Exception) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot reach it ({exc.reason})"
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if str(exc) else type(exc).__name__
