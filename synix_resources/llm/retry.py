"""Retry policy: exponential backoff with jitter, honouring the server's retry-after.

Providers raise `RetryableCallError` for failures worth another attempt (429, 529, 5xx,
timeouts, dropped connections) and `LLMError` for the rest; `RetryPolicy.run` does the waiting.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from synix_resources.errors import LLMError

log = logging.getLogger("synix.llm")
T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def is_retryable_status(status: int | None) -> bool:
    return status is not None and (status in RETRYABLE_STATUSES or status >= 500)


class RetryableCallError(Exception):
    """One attempt failed in a way that another attempt may fix."""

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None):
        self.status = status
        self.retry_after = retry_after
        super().__init__(message)


def parse_retry_after(headers) -> float | None:
    """Seconds from `retry-after-ms` / `retry-after` (seconds form only; dates are ignored)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue
    return None


@dataclass
class RetryPolicy:
    max_attempts: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    # Injectable so tests can record waits instead of sleeping.
    sleep: Callable[[float], None] = time.sleep
    seed: int | None = None
    _rng: random.Random = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Wait before attempt `attempt + 1`. The server's retry-after wins when it gives one."""
        if retry_after is not None:
            return min(retry_after, self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        with self._lock:  # random.Random is not documented as thread-safe
            jitter = self._rng.uniform(0, ceiling / 2)
        return ceiling / 2 + jitter  # "equal jitter": spreads retries, never waits ~0

    def run(self, attempt_fn: Callable[[int], T], *, label: str, provider: str) -> tuple[T, int]:
        """Call `attempt_fn(attempt)` until it succeeds; return (result, attempts used)."""
        attempt = 1
        while True:
            try:
                return attempt_fn(attempt), attempt
            except RetryableCallError as err:
                if attempt >= self.max_attempts:
                    status = f"status {err.status}" if err.status else str(err)
                    raise LLMError(
                        f"{provider} call for {label or 'request'} failed after {attempt} attempts"
                        f" ({status})", status=err.status, retryable=True,
                        hint="the provider is overloaded or unreachable; retry the build later, "
                             "lower concurrency, or raise max_attempts") from err
                wait = self.delay(attempt, err.retry_after)
                log.info("%s call for %s: %s; retry %d/%d in %.2fs", provider, label or "request",
                         err, attempt + 1, self.max_attempts, wait)
                self.sleep(wait)
                attempt += 1
