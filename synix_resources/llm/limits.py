"""Requests-per-minute and tokens-per-minute limits shared by every thread of one client."""
from __future__ import annotations

import threading
import time
from typing import Callable


class _Bucket:
    """Token bucket holding up to one minute's allowance, refilled continuously."""

    def __init__(self, per_minute: float, now: float):
        self.capacity = float(per_minute)
        self.level = float(per_minute)
        self.rate = per_minute / 60.0
        self.stamp = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        amount = min(amount, self.capacity)  # a request larger than a minute's budget still runs
        return 0.0 if self.level >= amount else (amount - self.level) / self.rate


class RateLimiter:
    """Blocks `acquire` until both the request and token budgets allow one more call.

    A limit of 0 or None means unlimited.
    """

    def __init__(self, requests_per_minute: float | None = None,
                 tokens_per_minute: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        now = clock()
        self._requests = _Bucket(requests_per_minute, now) if requests_per_minute else None
        self._tokens = _Bucket(tokens_per_minute, now) if tokens_per_minute else None

    def acquire(self, tokens: int = 0) -> float:
        """Take one request and `tokens` tokens; returns the seconds spent waiting."""
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                wait = 0.0
                for bucket, amount in ((self._requests, 1), (self._tokens, tokens)):
                    if bucket is not None:
                        bucket.refill(now)
                        wait = max(wait, bucket.wait_for(amount))
                if wait <= 0:
                    for bucket, amount in ((self._requests, 1), (self._tokens, tokens)):
                        if bucket is not None:
                            bucket.level -= min(amount, bucket.capacity)
                    return waited
            self._sleep(wait)
            waited += wait
