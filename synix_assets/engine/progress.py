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


@contextmanager
def listening(listener: Listener):
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def finished(layer: str, count: int) -> None:
    """Tell listeners that `count` partitions of `layer` are done (built or failed) so far."""
    with _lock:
        targets = list(_listeners)
    for listener in targets:
        listener(layer, count)
