"""The LLM request budget shared through Redis: several processes together never exceed it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synix_resources.errors import LLMConfigError
from synix_resources.llm import shared_limit
from synix_resources.llm.factory import make_client
from synix_resources.llm.shared_limit import SharedRateLimiter, max_per_second, request_stamps

REPO = Path(__file__).resolve().parents[2]
# One "worker": a fake client with 8 threads and a 50 ms model, limited only by the shared budget.
WORKER = """
import sys
from synix_resources.llm.factory import make_client
from synix_resources.llm.types import LLMRequest
client = make_client(provider="fake", fake_latency_s=0.05, concurrency=8)
results = client.complete_many([LLMRequest(f"worker {sys.argv[1]} request {i}") for i in range(40)])
assert all(not isinstance(r, Exception) for r in results), results
print(client.calls)
"""


def test_max_per_second_counts_the_busiest_one_second_span():
    assert max_per_second([]) == 0
    assert max_per_second([0.0, 0.5, 0.99, 1.0, 1.2]) == 4  # 0.5 … 1.2
    assert max_per_second([5.0, 1.0, 1.1, 1.2, 9.0]) == 3


def test_three_processes_share_one_budget_and_never_exceed_it(redis_server):
    url = redis_server.url(3)
    shared_limit.reset(url)
    env = {**os.environ, "PYTHONPATH": str(REPO), "SYNIX_LLM_PROVIDER": "fake",
           "SYNIX_LLM_SHARED_LIMIT_URL": url, "SYNIX_LLM_MAX_REQUESTS_PER_S": "20"}
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(n)], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(3)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
    assert [p.returncode for p in procs] == [0, 0, 0], [e for _, e in outs]
    assert sum(int(o.strip()) for o, _ in outs) == 120
    stamps = request_stamps(url)
    assert len(stamps) == 120
    # 3 × 8 threads at 50 ms could send ~480/s; together they got 20/s and no more
    assert max_per_second(stamps) <= 20
    assert max_per_second(stamps) >= 15  # the budget was used, not starved
    assert time.monotonic() - started >= 120 / 20 - 1.5


def test_unreachable_redis_is_one_clear_error():
    limiter = SharedRateLimiter("redis://127.0.0.1:1/0", 5)
    with pytest.raises(LLMConfigError) as info:
        limiter.acquire()
    assert "unreachable" in str(info.value) and "redis://127.0.0.1:1/0" in str(info.value)


def test_shared_limit_without_a_rate_is_refused(monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_SHARED_LIMIT_URL", "redis://127.0.0.1:1/0")
    with pytest.raises(LLMConfigError) as info:
        make_client(provider="fake")
    assert "SYNIX_LLM_MAX_REQUESTS_PER_S" in info.value.one_line()
