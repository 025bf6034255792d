"""One request budget shared by every process of a distributed build, kept in Redis (the broker).

Each client's own `RateLimiter` bounds one process; eight workers with their own budgets would
send eight times the allowed requests. `SharedRateLimiter.acquire` asks Redis instead: one Lua
script, atomic on the server, takes a slot only while fewer than `max_requests_per_s` requests
were taken in the last second, timed by the Redis server's clock so the workers' clocks never
matter. The window is exact (a sliding log), so no one-second span ever holds more than the limit,
which a token bucket with a burst allowance cannot promise. Every slot taken is also appended to a
stamp list (`<key>:stamps`, capped), the record that proves the rate afterwards
(`request_stamps`, `max_per_second`).
"""
from __future__ import annotations

import time
import uuid
from typing import Callable

from synix_resources.errors import LLMConfigError

from .limits import RateLimiter

STAMPS_KEPT = 1_000_000  # newest stamps kept for the proof; older ones are dropped
DEFAULT_KEY = "synix:llm"

# KEYS[1] window sorted set, KEYS[2] stamp list; ARGV[1] limit per second, ARGV[2] a unique member.
# Returns 0 when the slot was taken, else the microseconds to wait before asking again.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 1000000)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], 2000)
  redis.call('RPUSH', KEYS[2], now)
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + 1000000 - now)
"""


def _connect(url: str):
    try:
        import redis
    except ImportError:
        raise LLMConfigError("a shared LLM rate limit needs the redis client",
                             hint='pip install -e ".[scale]"') from None
    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)


class SharedRateLimiter:
    """Blocks `acquire` until the shared budget (and the process's own limiter, if any) allows
    one more request. Same interface as `RateLimiter`."""

    def __init__(self, url: str, max_requests_per_s: float, *, key: str = DEFAULT_KEY,
                 local: RateLimiter | None = None, sleep: Callable[[float], None] = time.sleep):
        if max_requests_per_s < 1:
            raise LLMConfigError(f"shared LLM rate limit {max_requests_per_s!r} is below one request per second",
                                 hint="set SYNIX_LLM_MAX_REQUESTS_PER_S to e.g. 20")
        self.url, self.key, self.limit = url, key, float(max_requests_per_s)
        self.local = local
        self._sleep = sleep
        self._redis = _connect(url)
        self._take = self._redis.register_script(_TAKE)

    def acquire(self, tokens: int = 0) -> float:
        waited = self.local.acquire(tokens) if self.local is not None else 0.0
        import redis

        member = uuid.uuid4().hex  # one per request, unique across processes
        while True:
            try:
                wait_us = int(self._take(keys=[f"{self.key}:window", f"{self.key}:stamps"],
                                         args=[int(self.limit), member, STAMPS_KEPT]))
            except redis.RedisError as exc:
                raise LLMConfigError(f"the shared LLM rate limit at {self.url} is unreachable: "
                                     f"{exc}", hint="start Redis there or unset "
                                                    "SYNIX_LLM_SHARED_LIMIT_URL") from None
            if wait_us == 0:
                return waited
            self._sleep(wait_us / 1e6)
            waited += wait_us / 1e6

    def close(self) -> None:
        self._redis.close()


def request_stamps(url: str, key: str = DEFAULT_KEY) -> list[float]:
    """Every recorded request time (seconds, Redis server clock), oldest first."""
    conn = _connect(url)
    try:
        return [int(v) / 1e6 for v in conn.lrange(f"{key}:stamps", 0, -1)]
    finally:
        conn.close()


def reset(url: str, key: str = DEFAULT_KEY) -> None:
    """Forget the window and the stamps (a fresh measurement)."""
    conn = _connect(url)
    try:
        conn.delete(f"{key}:window", f"{key}:stamps")
    finally:
        conn.close()


def max_per_second(stamps: list[float]) -> int:
    """The most requests inside any one-second span (a sliding window over the sorted stamps)."""
    ordered = sorted(stamps)
    best, start = 0, 0
    for end, t in enumerate(ordered):
        while t - ordered[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best
