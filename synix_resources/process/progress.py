"""Per-partition progress inside a layer build, for whoever is listening in this process.

`synix run` launches Dagster runs in-process, so the CLI can listen to the asset bodies here and
move its bars partition by partition instead of a layer at a time.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

Listener = Callable[[str, int], None]  # (layer, partitions finished so far in this build step)

_listeners: list[Listener] = []
_lock = threading.Lock()
_offsets: dict[str, int] = {}  # layer → partitions finished before the current build call


@contextmanager
def listening(listener: Listener):
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


@contextmanager
def counted_from(layer: str, done: int):
    """Within: counts reported for `layer` start after `done` partitions finished earlier in the
    same build step (the work graph builds a layer in several calls, e.g. month by month)."""
    with _lock:
        _offsets[layer] = done
    try:
        yield
    finally:
        with _lock:
            _offsets.pop(layer, None)


def finished(layer: str, count: int) -> None:
    """Tell listeners that `count` partitions of `layer` are done (built or failed) so far."""
    with _lock:
        targets = list(_listeners)
        count += _offsets.get(layer, 0)
    for listener in targets:
        listener(layer, count)
