"""Ctrl-C and SIGTERM during a build: stop promptly, remember which signal came, never pass for success.

While an in-process Dagster run executes, Dagster replaces the SIGINT/SIGTERM handlers: inside an
asset a signal becomes Dagster's own interruption error (a failed step, not an exception out of
`materialize`), and a signal that lands between steps is swallowed. So the signals are also
recorded through `signal.set_wakeup_fd`, which the interpreter writes to whichever Python handler
is installed at the time; the runner asks `received()` after each Dagster run.

Outside Dagster, a watched SIGTERM behaves like Ctrl-C (a KeyboardInterrupt in the main thread),
so the build unwinds through the same bookkeeping instead of dying with its run marked running.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Watch:
    """The signals seen while a `watching()` block is active."""

    def __init__(self, read_fd: int | None):
        self._read_fd = read_fd
        self._seen: list[int] = []

    def received(self) -> list[int]:
        """Every watched signal delivered so far, in order."""
        if self._read_fd is not None:
            while True:
                try:
                    data = os.read(self._read_fd, 512)
                except (BlockingIOError, InterruptedError):
                    break
                if not data:
                    break
                self._seen += [b for b in data if b in SIGNALS]
        return list(self._seen)


_active: Watch | None = None


def _raise_interrupt(signo, frame) -> None:
    raise KeyboardInterrupt


@contextmanager
def watching() -> Iterator[Watch]:
    """Within: SIGINT and SIGTERM raise KeyboardInterrupt and are recorded. Nested blocks share
    the outer watch; off the main thread (where handlers cannot be set) nothing is installed."""
    global _active
    if _active is not None:
        yield _active
        return
    if threading.current_thread() is not threading.main_thread():
        yield Watch(None)
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    old_handlers = {s: signal.getsignal(s) for s in SIGNALS}
    watch = Watch(read_fd)
    _active = watch
    try:
        for s in SIGNALS:
            signal.signal(s, _raise_interrupt)
        yield watch
    finally:
        watch.received()  # drain before the pipe closes
        for s, handler in old_handlers.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_fd)
        os.close(read_fd)
        os.close(write_fd)
        _active = None


def received() -> list[int]:
    """Signals the active watch has seen (empty when nothing watches)."""
    return _active.received() if _active is not None else []


def signal_number() -> int:
    """The first watched signal seen, or SIGINT when an interrupt came without one (the default
    handler, or a KeyboardInterrupt raised in code)."""
    seen = received()
    return seen[0] if seen else int(signal.SIGINT)
