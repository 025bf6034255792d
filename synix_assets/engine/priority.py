"""The work graph's LLM scheduler: every call of one build queued at a priority (deeper layers
first, then earlier periods), run by as many threads as the client's concurrency, and dropped —
never sent — once the graph stops or a signal came (engine/interrupts.py).
"""
from __future__ import annotations

import itertools
import queue
import threading
from concurrent.futures import CancelledError, Future, as_completed
from typing import Callable

from synix_resources.process import interrupts
from synix_resources.errors import LLMError

WAIT_S = 0.2  # the main thread wakes this often while it waits, so Ctrl-C is handled at once


def _wait_for(event: threading.Event) -> None:
    """Wait until `event` is set (a layer's thread sets it in its `finally`), waking every
    WAIT_S so a signal reaches the main thread's handler at once — or, when a library swallowed
    the KeyboardInterrupt the handler raised, is seen on the watch and raised here."""
    while not event.is_set():
        interrupts.raise_if_received()
        event.wait(WAIT_S)


class GraphStopped(Exception):
    """The graph was stopped (a signal, or a layer that did not finish) before this layer ended."""


class _PriorityPool:
    """`workers` threads running submitted calls, lowest priority tuple first. A call is only
    started while `halted()` is false: once a signal came (or the graph stopped) the queued calls
    are cancelled, never sent, even before the main thread gets to `stop()` (Dagster may hold the
    signal for a while)."""

    def __init__(self, workers: int, halted: Callable[[], bool] = lambda: False):
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._seq = itertools.count()
        self._halted = halted
        self._lock = threading.Lock()  # a submit and stop's drain never interleave
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"synix-graph-llm-{i}", daemon=True)
                         for i in range(workers)]
        for t in self._threads:
            t.start()

    def submit(self, priority: tuple, fn: Callable, *args) -> Future:
        future: Future = Future()
        with self._lock:
            if self._closed:  # after stop no worker is left to run it: cancelled at once
                _drop(future)
                return future
            self._queue.put((priority, next(self._seq), future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            _, _, future, fn, args = self._queue.get()
            if future is None:
                return
            if self._halted():
                future.cancel()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # handed to whoever waits for this call
                future.set_exception(exc)

    def stop(self) -> None:
        """Drop the queued calls (cancelled, never sent); the calls in flight finish."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    _, _, future, _, _ = self._queue.get_nowait()
                except queue.Empty:
                    break
                if future is not None:
                    _drop(future)
            for _ in self._threads:
                self._queue.put(((float("inf"),), next(self._seq), None, None, ()))
        for t in self._threads:
            t.join(timeout=60)


def _drop(future: Future) -> None:
    """Cancel a call that was never started. `cancel()` alone does not wake `as_completed`
    (only `set_running_or_notify_cancel` tells its waiters), which would then wait forever."""
    future.cancel()
    future.set_running_or_notify_cancel()


class _PriorityLLM:
    """The build's LLM client, with every call queued on the graph's scheduler at a priority."""

    def __init__(self, client, pool: _PriorityPool, priority: Callable, stopped: Callable[[], bool]):
        self._client, self._pool, self._priority, self._stopped = client, pool, priority, stopped

    def _check(self) -> None:
        # After a stop nothing more is stored: an answer that arrives now is in the response
        # cache, so the next build gets it without paying again.
        if self._stopped():
            raise GraphStopped("stopped")

    def __getattr__(self, name):  # provider, model, concurrency, context_window_for, …
        return getattr(self._client, name)

    def complete(self, request):
        try:
            result = self._pool.submit(self._priority(request), self._client.complete, request).result()
        except CancelledError:  # dropped by a stop or a signal: never sent
            raise GraphStopped("stopped") from None
        self._check()
        return result

    def _complete_or_error(self, request):
        try:
            return self._client.complete(request)
        except LLMError as err:
            return err

    def complete_many(self, requests, *, batch: bool = False, on_result=None):
        requests = list(requests)
        futures = {self._pool.submit(self._priority(r), self._complete_or_error, r): i
                   for i, r in enumerate(requests)}
        results: list = [None] * len(requests)
        try:
            for future in as_completed(futures):
                i = futures[future]
                self._check()
                if future.cancelled():  # dropped by a stop or a signal: never sent
                    raise GraphStopped("stopped")
                results[i] = future.result()
                if on_result is not None:
                    on_result(i, results[i])
        finally:
            for future in futures:  # stopped half-way: the rest is never sent
                future.cancel()
        return results
