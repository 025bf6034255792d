"""Ctrl-C and SIGTERM during a build: stop promptly, remember which signal came, never pass for success.

While an in-process Dagster run executes, Dagster replaces the SIGINT/SIGTERM handlers: inside an
asset a signal becomes Dagster's own interruption error (a failed step, not an exception out of
`materialize`), and a signal that lands between steps is swallowed. So the signals are also
recorded through `signal.set_wakeup_fd`, which the interpreter writes to whichever Python handler
is installed at the time; the runner asks `received()` after each Dagster run.

Outside Dagster, a watched SIGTERM behaves like Ctrl-C (a KeyboardInterrupt in the main thread),
so the build unwinds through the same bookkeeping instead of dying with its run marked running.

Once a command has decided how it ends, `settle()` makes later signals harmless (see there).
"""
from __future__ import annotations

import _thread
import logging
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Watch:
    """The signals seen while a `watching()` block is active."""

    def __init__(self, read_fd: int | None):
        self._read_fd = read_fd
        self._seen: list[int] = []
        self._lock = threading.Lock()  # the work graph's threads ask too

    def received(self) -> list[int]:
        """Every watched signal delivered so far, in order."""
        with self._lock:
            return self._drain()

    def _drain(self) -> list[int]:
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

    def close(self) -> None:
        """Read what is left and close the pipe's read end; later asks return what was seen."""
        with self._lock:
            self._drain()
            if self._read_fd is not None:
                os.close(self._read_fd)
                self._read_fd = None


_active: Watch | None = None


_owed = False  # an interrupt was swallowed (see _redeliver) and not raised since
_settled = False  # the outcome is decided: SIGINT and SIGTERM are ignored (see settle)
_released: dict[int, object] = {}  # the handlers settle() set aside, for release()
_redelivered = False  # a redelivery was sent and its handler call has not run yet
# Held by a redelivering thread from its check of `_owed` to `interrupt_main`, and by
# `watching()` while it ends the watch: a redelivery is sent only while our handler is installed.
_delivering = threading.Lock()
REDELIVER_AFTER_S = 0.01


def _raise_interrupt(signo, frame) -> None:
    global _owed, _redelivered
    if _settled:
        # a pending signal run by signal.signal() while settle() switches handlers, or our
        # handler put back after settle() by a library restoring what it found (Dagster's
        # capture_interrupts, ending when its generator is collected): ignored at the OS level
        # again, as Python resets a Python handler to the default action at shutdown
        signal.signal(signo, signal.SIG_IGN)
        return
    if _redelivered:
        _redelivered = False
        if not _owed:  # the main thread raised for that interrupt meanwhile: nothing is owed
            return
    _owed = False
    raise KeyboardInterrupt


def raise_if_received() -> None:
    """Raise KeyboardInterrupt if a watched signal came: for the main thread's waits, in case the
    handler's own raise was swallowed by a library."""
    global _owed
    if received():
        _owed = False
        raise KeyboardInterrupt


def _redeliver(previous):
    """A sys.unraisablehook. A signal handler raises in whatever the main thread runs at that
    moment; inside a weakref callback or a `__del__` (the garbage collector runs them anywhere,
    SQLAlchemy registers some) Python swallows the KeyboardInterrupt, printing a traceback, and the
    build would go on as if no Ctrl-C came. Such an interrupt is dropped silently and delivered
    again a moment later, once the main thread is back in ordinary code, to whichever handler
    (ours or Dagster's) is installed then — unless the main thread raised for it meanwhile."""

    def hook(unraisable) -> None:
        global _owed
        watch = _active
        if watch is not None and not _settled and threading.current_thread() is threading.main_thread() \
                and not issubclass(unraisable.exc_type, Exception) and watch.received():
            _owed = True
            # not threading.Thread: its start() waits, and the handler would run inside this hook
            _thread.start_new_thread(_deliver_later, (watch, watch.received()[0]))
            return
        previous(unraisable)
    return hook


class _InterruptLogs(logging.Filter):
    """Drops log records carrying the interrupt a library is passing on (SQLAlchemy's pool logs
    "Exception closing connection" with its traceback, then re-raises): the build reports the
    interrupt once, as its one line."""

    def __init__(self, watch: "Watch"):
        super().__init__()
        self._watch = watch

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[0] if record.exc_info else None
        return not (exc is not None and not issubclass(exc, Exception) and self._watch.received())


def _log_handlers() -> list[logging.Handler]:
    """Where a library's log record ends up unless it configured its own: the root logger's
    handlers, or Python's last-resort stderr handler."""
    return [*logging.getLogger().handlers, *([logging.lastResort] if logging.lastResort else [])]


def _deliver_later(watch: "Watch", signo: int) -> None:
    global _redelivered
    time.sleep(REDELIVER_AFTER_S)
    with _delivering:
        if _owed and _active is watch:
            _redelivered = True
            _thread.interrupt_main(signo)


@contextmanager
def watching() -> Iterator[Watch]:
    """Within: SIGINT and SIGTERM raise KeyboardInterrupt and are recorded. Nested blocks share
    the outer watch; off the main thread (where handlers cannot be set) nothing is installed."""
    global _active, _owed
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
    old_hook = sys.unraisablehook
    watch = Watch(read_fd)
    _active = watch
    quiet, filtered = _InterruptLogs(watch), _log_handlers()
    try:
        sys.unraisablehook = _redeliver(old_hook)
        for handler in filtered:
            handler.addFilter(quiet)
        for s in SIGNALS:
            signal.signal(s, _raise_interrupt)
        yield watch
    finally:
        # No redelivery after this; one already sent runs our handler (signal.signal below
        # handles pending signals first), which finds nothing owed. Under load it once landed
        # after the handlers were restored: a second KeyboardInterrupt killed the process by
        # SIGINT after the build had reported its interrupt.
        with _delivering:
            _active = None
            _owed = False
        sys.unraisablehook = old_hook
        for handler in filtered:
            handler.removeFilter(quiet)
        if _settled:  # the signals stay ignored; release() brings these back
            _released.update(old_handlers)
        else:
            for s, handler in old_handlers.items():
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_fd)
        watch.close()  # under the watch's lock: no thread reads a closed (or reused) descriptor
        os.close(write_fd)
        _active = None


def settle() -> None:
    """The command has decided how it ends (its outcome line is next): a later Ctrl-C or SIGTERM
    — a second one from the user, a redelivery landing late, one pending when a handler is
    restored — must not turn that into "Aborted!", a traceback, or death by signal (exit -2 after
    the line said 130). From now on both signals are ignored: our handler raises no more, no
    redelivery is sent, and a watch that ends leaves them ignored. They stay so until `release()`,
    which a process that is ending never calls: an ignored signal stays ignored through
    interpreter shutdown, where Python resets the ones it handles to their default action."""
    global _settled, _owed, _redelivered
    with _delivering:  # no redelivery is sent after this
        _settled, _owed = True, False
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            old = signal.getsignal(s)
            try:
                signal.signal(s, signal.SIG_IGN)
            except KeyboardInterrupt:  # a pending one ran a raising handler first (no watch active)
                signal.signal(s, signal.SIG_IGN)
            if _active is None:  # else the watch sets aside the handlers it found when it ends
                _released.setdefault(s, old)
        _redelivered = False  # one sent before ran our handler above: signal.signal runs pending ones first
    # CPython notes "an unhandled KeyboardInterrupt" whenever one leaves code run from a string by
    # exec() or eval() — dataclasses and namedtuple make their methods so, many while Dagster is
    # imported — even when it is caught further up; the process then ends by killing itself with
    # SIGINT (exit -2, no traceback) whatever exit code it chose. A string run without error
    # clears the note; with the signals ignored, no interrupt can set it again.
    exec("")


def release() -> None:
    """Undo `settle()` for a caller that goes on in the same process (a command run in-process by
    a test or another program): the handlers from before come back."""
    global _settled
    with _delivering:
        _settled = False
    if threading.current_thread() is threading.main_thread():
        for s, handler in _released.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    _released.clear()


def received() -> list[int]:
    """Signals the active watch has seen (empty when nothing watches)."""
    return _active.received() if _active is not None else []


def signal_number() -> int:
    """The first watched signal seen, or SIGINT when an interrupt came without one (the default
    handler, or a KeyboardInterrupt raised in code)."""
    seen = received()
    return seen[0] if seen else int(signal.SIGINT)
