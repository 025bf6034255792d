"""Shared machinery through the fake provider: retries, concurrency, limits, map-reduce,
replay cache, provider selection and secret hygiene."""
from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter

import httpx2
import pytest

from synix_resources.errors import LLMConfigError, LLMError, LLMRefusal
from synix_resources.llm.anthropic_client import AnthropicClient
from synix_resources.llm.cache import ResponseCache
from synix_resources.llm.extractive import ExtractiveClient
from synix_resources.llm.fake import FakeClient
from synix_resources.llm.limits import RateLimiter
from synix_resources.llm.mapreduce import estimate_tokens
from synix_resources.llm.openai_compat import OpenAICompatClient
from synix_resources.llm.factory import make_client
from synix_resources.llm.retry import RetryPolicy
from synix_resources.llm.types import LLMRequest

NO_WAIT = dict(retry=RetryPolicy(sleep=lambda s: None))


def reqs(n, prefix="conversation"):
    return [LLMRequest(f"Summarise {prefix} {i} about topic{i} and project{i % 7}", label=f"c{i}")
            for i in range(n)]


def test_fake_output_is_deterministic_and_input_dependent():
    a, b = FakeClient(), FakeClient()
    first = a.complete(LLMRequest("Alice moved to Lisbon with Maria"))
    assert first.text == b.complete(LLMRequest("Alice moved to Lisbon with Maria")).text
    other = a.complete(LLMRequest("Bob compiles Rust code"))
    assert other.text != first.text and "lisbon" in first.text and "rust" in other.text
    assert a.calls == 2 and first.provider == "fake" and first.cost_usd == 0


def test_fail_marker_gives_non_retryable_400_and_other_requests_continue():
    client = FakeClient(**NO_WAIT)
    batch = reqs(3)
    batch[1] = LLMRequest("this one SYNIX_FAIL_400", label="conv-bad")
    results = client.complete_many(batch)
    assert isinstance(results[1], LLMError) and results[1].status == 400
    assert "conv-bad" in str(results[1]) and not results[1].retryable
    assert all(not isinstance(results[i], LLMError) for i in (0, 2))
    assert client.failures[400] == 1  # tried once, never retried


def test_refusal_marker_is_flagged_never_returned_as_text():
    with pytest.raises(LLMRefusal) as info:
        FakeClient().complete(LLMRequest("SYNIX_REFUSE please", label="c-r"))
    assert info.value.response.refusal and "c-r" in str(info.value)


def test_retries_under_30_percent_failures_all_complete_with_attempts_recorded():
    client = FakeClient(failure_rate=0.3, seed=7, **NO_WAIT)
    results = client.complete_many(reqs(200))
    assert all(not isinstance(r, LLMError) for r in results)
    attempts = Counter(r.attempts for r in results)
    assert attempts[1] > 100 and sum(v for k, v in attempts.items() if k > 1) > 20
    assert set(client.failures) <= {429, 529, 500, "timeout"} and len(client.failures) == 4
    assert client.calls == sum(r.attempts for r in results)
    # same seed, same prompts -> same failures: reproducible
    again = FakeClient(failure_rate=0.3, seed=7, **NO_WAIT).complete_many(reqs(200))
    assert [r.attempts for r in again] == [r.attempts for r in results]


def test_failure_rate_of_one_gives_up_after_bounded_attempts():
    client = FakeClient(failure_rate=1.0, retry=RetryPolicy(max_attempts=3, sleep=lambda s: None))
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("x", label="conv-down"))
    assert client.calls == 3 and "3 attempts" in str(info.value) and info.value.retryable


def test_backoff_grows_exponentially_and_honours_retry_after():
    policy = RetryPolicy(base_delay_s=1, max_delay_s=30, seed=3)
    delays = [policy.delay(n, None) for n in range(1, 6)]
    assert all(2 ** (n - 2) <= d <= 2 ** (n - 1) for n, d in zip(range(1, 6), delays))
    assert policy.delay(1, 12.5) == 12.5 and policy.delay(1, 999) == 30


def test_concurrency_bound_is_honoured():
    client = FakeClient(latency_s=0.05, concurrency=4)
    client.complete_many(reqs(24))
    assert client.peak_in_flight == 4


def test_shared_concurrency_bound_across_callers_threads():
    client = FakeClient(latency_s=0.05, concurrency=3)
    threads = [threading.Thread(target=client.complete_many, args=(reqs(6, f"t{t}"),))
               for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert client.peak_in_flight == 3


def test_n_calls_take_about_n_times_latency_over_concurrency():
    n, latency, concurrency = 60, 0.1, 20
    client = FakeClient(latency_s=latency, concurrency=concurrency)
    started = time.monotonic()
    client.complete_many(reqs(n))
    elapsed = time.monotonic() - started
    ideal = n * latency / concurrency  # 0.3 s
    assert ideal * 0.95 <= elapsed <= ideal * 1.8


def test_rate_limiter_spaces_requests_and_tokens():
    now = [0.0]
    waits: list[float] = []

    def sleep(s):
        waits.append(s)
        now[0] += s

    limiter = RateLimiter(requests_per_minute=60, clock=lambda: now[0], sleep=sleep)
    for _ in range(60):
        assert limiter.acquire() == 0  # a minute's allowance is available at once
    assert limiter.acquire() == pytest.approx(1.0)  # then one per second
    tokens = RateLimiter(tokens_per_minute=6000, clock=lambda: now[0], sleep=sleep)
    tokens.acquire(6000)
    assert tokens.acquire(3000) == pytest.approx(30.0)


def test_rate_limit_applies_through_the_client():
    now = [0.0]
    limiter = RateLimiter(requests_per_minute=2, clock=lambda: now[0],
                          sleep=lambda s: now.__setitem__(0, now[0] + s))
    client = FakeClient(limiter=limiter)
    for r in reqs(4):
        client.complete(r)
    assert now[0] == pytest.approx(60.0)  # calls 3 and 4 waited 30 s each


def test_oversize_input_is_summarised_in_parts_then_rerendered():
    transcript = "\n\n".join(f"Paragraph {i}: we discussed budget line {i} and the plan for "
                             f"milestone {i} in detail with several people." * 3
                             for i in range(200))
    rendered: list[int] = []

    def render(sources):
        prompt = "Summarise this conversation in 100-200 words.\n\n" + "\n".join(
            f"## {sid}\n{text}" for sid, text in sources)
        rendered.append(len(prompt))
        return prompt

    window = 2000
    client = FakeClient(context_tokens=window)
    request = LLMRequest(render([("conv-big", transcript)]), render=render, max_tokens=300,
                         sources=[("conv-big", transcript)], label="conv-big")
    assert estimate_tokens(request.prompt) > window
    resp = client.complete(request)
    assert resp.map_reduce_parts > 1 and "map_reduce" in resp.flags
    assert client.calls == resp.map_reduce_parts + 1
    assert estimate_tokens("x" * rendered[-1]) <= window - 300
    assert resp.audit()["map_reduce_parts"] == resp.map_reduce_parts
    assert resp.input_tokens > estimate_tokens(transcript) * 0.9  # parts are accounted


def test_oversize_input_without_render_fails_before_sending():
    client = FakeClient(context_tokens=2000)
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("y" * 9000, label="conv-huge"))
    message = info.value.one_line()
    assert client.calls == 0 and "conv-huge" in message and "render=" in message


def test_replay_answers_from_cache_with_zero_calls(cache_location):
    path = cache_location
    live = FakeClient(cache=ResponseCache(path))
    originals = live.complete_many(reqs(5))
    replay = FakeClient(cache=ResponseCache(path), replay=True)
    again = replay.complete_many(reqs(5))
    assert replay.calls == 0
    assert [r.text for r in again] == [r.text for r in originals]
    assert all(r.from_cache and r.cost_usd == 0 and r.attempts == 0 for r in again)
    missing = replay.complete_many([LLMRequest("never seen", label="conv-new")])[0]
    assert isinstance(missing, LLMError) and "conv-new" in str(missing)


def test_identical_request_is_served_from_cache_without_replay(cache_location):
    cache = ResponseCache(cache_location)
    first = FakeClient(cache=cache, model="fake-big").complete(LLMRequest("same prompt", label="a"))
    later = FakeClient(cache=cache, model="fake-big")  # e.g. the process after a crash
    again = later.complete(LLMRequest("same prompt", label="a-again"))
    assert later.calls == 0 and again.text == first.text
    assert again.from_cache and again.cost_usd == 0 and again.attempts == 0
    assert again.audit()["model"] == "fake-big" and again.audit()["provider"] == "fake"
    assert again.label == "a-again"
    # any change to the request's settings is a different request: the provider is called
    for changed in (dict(model="other"), dict(temperature=0.9), dict(max_tokens=5),
                    dict(system="new system")):
        assert not later.complete(LLMRequest("same prompt", **changed)).from_cache
    assert later.calls == 4
    # the batch path asks the provider only for what the cache cannot answer
    batch = later.complete_many([LLMRequest("same prompt"), LLMRequest("fresh prompt")],
                                batch=True)
    assert [r.from_cache for r in batch] == [True, False] and later.calls == 5


def test_cache_key_covers_model_temperature_and_max_tokens(cache_location):
    cache = ResponseCache(cache_location)
    FakeClient(cache=cache).complete(LLMRequest("same prompt"))
    replay = FakeClient(cache=cache, replay=True)
    for changed in (dict(model="other"), dict(temperature=0.9), dict(max_tokens=5),
                    dict(system="new system")):
        with pytest.raises(LLMError):
            replay.complete(LLMRequest("same prompt", **changed))


def test_forget_deletes_entries_by_marker_and_by_key(cache_location):
    cache = ResponseCache(cache_location)
    client = FakeClient(cache=cache)
    client.complete_many([LLMRequest("about Alice Smith"), LLMRequest("about Bob"),
                          LLMRequest("about Carol")])
    assert cache.delete_matching("Alice Smith") == 1 and cache.count() == 2
    from synix_resources.llm.cache import cache_key
    assert cache.delete_key(cache_key(LLMRequest("about Bob"), "fake", "fake-v1")) == 1
    assert cache.count() == 1
    with pytest.raises(ValueError):
        cache.delete_matching("")


def test_provider_selection_from_environment(caplog, monkeypatch):
    from synix_resources.llm import factory

    monkeypatch.setattr(factory, "_told", [])  # said once per process: maybe by an earlier test
    with caplog.at_level(logging.WARNING, logger="synix.llm"):
        assert isinstance(make_client(env={}), ExtractiveClient)
    assert "extractive" in caplog.text and len(caplog.records) == 1
    assert isinstance(make_client(env={"ANTHROPIC_API_KEY": "k"}), AnthropicClient)
    fake = make_client(provider="anthropic", env={"SYNIX_LLM_PROVIDER": "fake",
                                                  "SYNIX_FAKE_LATENCY_S": "0.25",
                                                  "SYNIX_FAKE_FAILURE_RATE": "0.1",
                                                  "SYNIX_LLM_MODEL": "fake-big"})
    assert isinstance(fake, FakeClient) and fake.latency_s == 0.25
    assert fake.failure_rate == 0.1 and fake.model == "fake-big"
    compat = make_client(env={"SYNIX_LLM_PROVIDER": "openai-compatible", "SYNIX_LLM_MODEL": "m",
                              "SYNIX_LLM_BASE_URL": "http://127.0.0.1:1/v1",
                              "OPENAI_API_KEY": "ok"})
    assert isinstance(compat, OpenAICompatClient)
    assert compat.http.headers["authorization"] == "Bearer ok"
    with pytest.raises(LLMConfigError) as info:
        make_client(provider="anthropic", env={})
    assert "ANTHROPIC_API_KEY" in info.value.one_line()
    with pytest.raises(LLMConfigError):
        make_client(env={"SYNIX_LLM_PROVIDER": "gpt"})
    with pytest.raises(LLMConfigError):
        make_client(env={"SYNIX_LLM_PROVIDER": "fake", "SYNIX_FAKE_LATENCY_S": "fast"})


def test_nothing_secret_is_stored_logged_or_raised(tmp_path, caplog):
    key = "sk-ant-api03-TOPSECRET-abcdef123456"

    def handler(request):
        body = json.loads(request.content)
        if "401" in body["messages"][0]["content"]:
            return httpx2.Response(401, json={"type": "error", "error": {
                "type": "authentication_error", "message": "invalid key"}})
        return httpx2.Response(200, json={
            "id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1}})

    caplog.set_level(logging.DEBUG)
    client = make_client(env={"ANTHROPIC_API_KEY": key}, cache_path=str(tmp_path / "c.sqlite"),
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    results = client.complete_many([LLMRequest("hello"), LLMRequest("401 please", label="c")])
    error = results[1]
    assert isinstance(error, LLMError)
    haystack = [json.dumps(results[0].audit()), error.one_line(), repr(error), repr(client),
                caplog.text]
    assert not any(key in text for text in haystack)
    for file in tmp_path.iterdir():
        assert key.encode() not in file.read_bytes()


def test_synix_llm_concurrency_env_bounds_requests_in_flight():
    client = make_client(provider="fake", fake_latency_s=0.05, concurrency=16,
                         env={"SYNIX_LLM_CONCURRENCY": "3"})
    assert client.concurrency == 3
    results = client.complete_many(reqs(12))
    assert all(not isinstance(r, LLMError) for r in results)
    assert client.peak_in_flight == 3


@pytest.mark.parametrize("bad", ["0", "-2", "many", "2.5"])
def test_synix_llm_concurrency_env_rejects_what_is_not_a_positive_whole_number(bad):
    with pytest.raises(LLMConfigError, match="SYNIX_LLM_CONCURRENCY"):
        make_client(provider="fake", env={"SYNIX_LLM_CONCURRENCY": bad})
