"""Ctrl-C reaches the build even when Python swallows it, and the work graph's scheduler starts no
queued LLM call once a signal came or the graph stopped (and never leaves a waiter hanging)."""
from __future__ import annotations

import signal
import sys
import threading
import time
import weakref
from concurrent.futures import as_completed

import pytest

from synix_assets.engine.priority import _PriorityPool
from synix_resources.process import interrupts


def test_an_interrupt_swallowed_by_a_weakref_callback_is_delivered_again_without_a_traceback(capfd):
    class Thing:
        pass

    def callback(_ref) -> None:  # as SQLAlchemy's, run by the garbage collector mid-build
        # to this thread (os.kill could pick another thread, and the handler would run later);
        # the handler runs on return, still inside the callback, which swallows its raise
        signal.raise_signal(signal.SIGINT)

    with interrupts.watching():
        thing = Thing()
        ref = weakref.ref(thing, callback)
        with pytest.raises(KeyboardInterrupt):
            del thing  # the callback runs here
            for _ in range(100):  # bounded: the interrupt is delivered again a moment later
                time.sleep(0.01)
        assert interrupts.received()[0] == signal.SIGINT
    assert ref() is None
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err


def test_other_unraisable_errors_still_reach_the_previous_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(repr(u.exc_value)))

    class Broken:
        def __del__(self):
            raise ValueError("broken finaliser")

    with interrupts.watching():
        Broken()
    assert seen == ["ValueError('broken finaliser')"]
    assert sys.unraisablehook is not None and not interrupts.received()


def _blocking_pool(workers: int = 1):
    """A pool whose first call blocks until released, so the next ones stay queued."""
    halted = threading.Event()
    pool = _PriorityPool(workers, halted.is_set)
    release, started = threading.Event(), []

    def call(n):
        started.append(n)
        if n == 0:
            release.wait(10)
        return n
    return pool, halted, release, started, call


def test_priority_pool_starts_no_queued_call_once_halted_and_wakes_its_waiters():
    pool, halted, release, started, call = _blocking_pool()
    futures = [pool.submit((0, n), call, n) for n in range(4)]
    while not started:
        time.sleep(0.01)
    halted.set()  # a signal came: the call in flight finishes, the queued ones never start
    release.set()
    done = list(as_completed(futures, timeout=10))  # no waiter is left hanging
    assert len(done) == 4 and started == [0]
    assert futures[0].result() == 0 and all(f.cancelled() for f in futures[1:])
    pool.stop()


def test_stop_drops_queued_calls_and_a_call_submitted_after_it_is_cancelled_at_once():
    pool, _halted, release, started, call = _blocking_pool()
    first = pool.submit((0,), call, 0)
    queued = [pool.submit((1, n), call, n) for n in (1, 2)]
    while not started:
        time.sleep(0.01)
    stopper = threading.Thread(target=pool.stop)
    stopper.start()
    # stop() drops what is queued before it waits for the call in flight
    assert all(f.cancelled() for f in as_completed(queued, timeout=10))
    late = pool.submit((0,), call, 3)  # a layer thread that had not seen the stop yet
    assert list(as_completed([late], timeout=1)) == [late] and late.cancelled()
    release.set()
    stopper.join(10)
    assert not stopper.is_alive() and first.result() == 0 and started == [0]


LOGS_THE_INTERRUPT = """
import logging, signal
from synix_resources.process import interrupts
log = logging.getLogger("sqlalchemy.pool.impl.QueuePool")  # no handler anywhere: Python's last resort
try:
    with interrupts.watching():
        try:
            signal.raise_signal(signal.SIGINT)
        except BaseException:  # as SQLAlchemy's pool does when closing a connection
            log.error("Exception closing connection %r", "conn", exc_info=True)
            raise
except KeyboardInterrupt:
    log.error("an ordinary error")
"""


def test_a_library_logging_the_interrupt_it_passes_on_prints_no_traceback(caplog):
    import logging
    import subprocess

    out = subprocess.run([sys.executable, "-c", LOGS_THE_INTERRUPT], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stderr == "an ordinary error\n", out.stderr
    # handlers on the root logger (here pytest's) get the same filter while the watch is on
    log = logging.getLogger("sqlalchemy.pool.impl.QueuePool")
    with interrupts.watching():
        with pytest.raises(KeyboardInterrupt):
            try:
                signal.raise_signal(signal.SIGINT)
            except BaseException:
                log.error("Exception closing connection %r", "conn", exc_info=True)
                raise
        log.error("an ordinary error")
    assert [r.getMessage() for r in caplog.records] == ["an ordinary error"]


def test_once_settled_signals_raise_nothing_even_after_the_watch_until_released():
    before = signal.getsignal(signal.SIGINT)
    try:
        with interrupts.watching():
            interrupts.settle()  # the command decided how it ends
            signal.raise_signal(signal.SIGINT)  # a second Ctrl-C: nothing raised
            signal.raise_signal(signal.SIGTERM)
        # the watch ended without restoring raising handlers: ignored by the OS, through shutdown
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        signal.raise_signal(signal.SIGINT)
    finally:
        interrupts.release()
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):  # a genuine Ctrl-C counts again
        signal.raise_signal(signal.SIGINT)


def test_the_cli_run_in_process_gives_the_caller_its_signal_handlers_back():
    from synix_assets.cli.main import main

    before = signal.getsignal(signal.SIGINT)
    interrupts.settle()  # as `synix run` does once its outcome is decided
    main.main(["--version"], standalone_mode=False)
    assert signal.getsignal(signal.SIGINT) is before
