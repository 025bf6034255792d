"""The real anthropic SDK against a mocked HTTP transport (no network).

This SDK generation is built on `httpx2`, so the mock is an `httpx2.MockTransport` handed in via
`http_client=httpx2.Client(transport=...)`; respx only patches `httpx` and cannot see it.
"""
from __future__ import annotations

import json

import httpx2
import pytest

from synix_resources.errors import LLMError, LLMRefusal
from synix_resources.llm.anthropic_client import AnthropicClient
from synix_resources.llm.cache import ResponseCache
from synix_resources.llm.pricing import estimate_cost
from synix_resources.llm.retry import RetryPolicy
from synix_resources.llm.types import LLMRequest

KEY = "sk-ant-test-SECRET-0123456789"
MODEL = "claude-sonnet-4-6"


def message(text="A summary.", stop_reason="end_turn", usage=None, model=MODEL):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0, **(usage or {})}}


def error_body(kind="overloaded_error", msg="Overloaded"):
    return {"type": "error", "error": {"type": kind, "message": msg}}


class Script:
    """Replies in order to /v1/messages calls and records what was sent."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.sent: list[dict] = []
        self.headers: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append(json.loads(request.content))
        self.headers.append(dict(request.headers))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply


def make(handler, tmp_path=None, **kw):
    waits: list[float] = []
    client = AnthropicClient(
        model=MODEL, api_key=KEY,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        retry=RetryPolicy(max_attempts=kw.pop("max_attempts", 6), sleep=waits.append, seed=1),
        cache=ResponseCache(tmp_path / "llm.sqlite") if tmp_path else None, **kw)
    return client, waits


def ok(body=None, status=200, headers=None):
    return httpx2.Response(status, json=body if body is not None else message(), headers=headers)


def test_200_returns_text_usage_cost_and_audit():
    script = Script(ok())
    client, _ = make(script)
    resp = client.complete(LLMRequest("Summarise this.", label="conv-1", template_hash="t1"))
    assert resp.text == "A summary." and resp.provider == "anthropic" and resp.model == MODEL
    assert (resp.input_tokens, resp.output_tokens, resp.attempts) == (100, 20, 1)
    assert resp.cost_usd == pytest.approx(estimate_cost(MODEL, 100, 20)) and resp.cost_usd > 0
    audit = resp.audit()
    assert audit["prompt_template_hash"] == "t1" and audit["rendered_prompt_hash"]
    assert json.loads(audit["raw_response"])["id"] == "msg_1"
    assert script.sent[0]["max_tokens"] == 1024 and script.sent[0]["model"] == MODEL
    # This SDK's API version rejects sampling parameters: none sent, and the audit says so.
    assert "temperature" not in script.sent[0] and resp.temperature is None


def test_429_with_retry_after_is_retried_and_wait_honoured():
    limited = ok(error_body("rate_limit_error", "slow down"), 429, {"retry-after": "7"})
    script = Script(limited, ok())
    client, waits = make(script)
    resp = client.complete(LLMRequest("hi", label="conv-2"))
    assert resp.attempts == 2 and waits == [7.0]


def test_529_overloaded_is_retried():
    script = Script(ok(error_body(), 529), ok(error_body(), 529), ok())
    client, waits = make(script)
    assert client.complete(LLMRequest("hi")).attempts == 3 and len(waits) == 2


def test_500_every_time_gives_up_after_max_attempts_with_clear_error():
    script = Script(ok(error_body("api_error", "boom"), 500))
    client, waits = make(script, max_attempts=4)
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("hi", label="conv-500"))
    assert info.value.status == 500 and "conv-500" in str(info.value)
    assert "4 attempts" in str(info.value) and len(script.sent) == 4 and len(waits) == 3
    assert waits[0] < waits[2]  # exponential backoff


def test_timeout_is_retried():
    script = Script(httpx2.ReadTimeout("slow"), ok())
    client, _ = make(script)
    assert client.complete(LLMRequest("hi")).attempts == 2


def test_400_is_not_retried_and_names_label_and_fix():
    script = Script(ok(error_body("invalid_request_error", "max_tokens too big"), 400))
    client, waits = make(script)
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("hi", label="conv-400"))
    assert info.value.status == 400 and not info.value.retryable and waits == []
    assert "conv-400" in info.value.one_line() and "check the model name" in info.value.one_line()


def test_complete_many_keeps_going_past_a_failed_request():
    def handler(request):
        body = json.loads(request.content)
        if "bad" in body["messages"][0]["content"]:
            return ok(error_body("invalid_request_error", "nope"), 400)
        return ok()
    client, _ = make(handler)
    results = client.complete_many([LLMRequest("good 1"), LLMRequest("bad", label="c-bad"),
                                    LLMRequest("good 2")])
    assert isinstance(results[1], LLMError) and "c-bad" in str(results[1])
    assert results[0].text == results[2].text == "A summary."


def test_refusal_and_empty_output_raise_llm_refusal():
    client, _ = make(Script(ok(message("I can't help with that", stop_reason="refusal"))))
    with pytest.raises(LLMRefusal) as info:
        client.complete(LLMRequest("x", label="conv-r"))
    assert "refusal" in info.value.response.flags
    client, _ = make(Script(ok(message(text=""))))
    with pytest.raises(LLMRefusal):
        client.complete(LLMRequest("x"))


def test_long_system_prompt_uses_cache_control_and_cache_tokens_are_costed():
    usage = {"input_tokens": 50, "cache_read_input_tokens": 4000,
             "cache_creation_input_tokens": 0}
    script = Script(ok(message(usage=usage)))
    client, _ = make(script)
    resp = client.complete(LLMRequest("the conversation", system="Rules. " * 1000))
    system = script.sent[0]["system"]
    assert system[0]["cache_control"] == {"type": "ephemeral"}
    assert resp.cache_read_tokens == 4000
    assert resp.cost_usd == pytest.approx(estimate_cost(MODEL, 50, 20, cache_read_tokens=4000))
    assert resp.cost_usd < estimate_cost(MODEL, 4050, 20)  # cheaper than uncached
    short = Script(ok())
    client, _ = make(short)
    client.complete(LLMRequest("x", system="Be brief."))
    assert short.sent[0]["system"] == "Be brief."


def test_max_tokens_stop_is_kept_but_flagged_truncated():
    client, _ = make(Script(ok(message("cut off mid", stop_reason="max_tokens"))))
    resp = client.complete(LLMRequest("x"))
    assert resp.text == "cut off mid" and "truncated" in resp.audit()["flags"]


def test_per_step_model_overrides_the_pipeline_model():
    script = Script(ok(message(model="claude-haiku-4-5")))
    client, _ = make(script)
    resp = client.complete(LLMRequest("x", model="claude-haiku-4-5"))
    assert script.sent[0]["model"] == "claude-haiku-4-5" and resp.model == "claude-haiku-4-5"
    assert resp.cost_usd == pytest.approx(estimate_cost("claude-haiku-4-5", 100, 20))


def test_sdk_retries_are_disabled_so_every_attempt_is_ours():
    script = Script(ok(error_body(), 529))
    client, _ = make(script, max_attempts=2)
    with pytest.raises(LLMError):
        client.complete(LLMRequest("x"))
    assert len(script.sent) == 2  # SDK retries would have made this larger


class BatchServer:
    """Message Batches endpoints: create, retrieve (in_progress then ended), results JSONL."""

    def __init__(self, polls_before_end=1):
        self.created = 0
        self.polls = 0
        self.polls_before_end = polls_before_end
        self.items: list[dict] = []

    def batch(self, status):
        return {"id": "msgbatch_1", "type": "message_batch", "processing_status": status,
                "request_counts": {"processing": 0 if status == "ended" else len(self.items),
                                   "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
                "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
                "ended_at": "2026-01-01T01:00:00Z" if status == "ended" else None,
                "results_url": ("https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"
                                if status == "ended" else None)}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            self.created += 1
            self.items = json.loads(request.content)["requests"]
            return httpx2.Response(200, json=self.batch("in_progress"))
        if path == "/v1/messages/batches/msgbatch_1":
            self.polls += 1
            done = self.polls > self.polls_before_end
            return httpx2.Response(200, json=self.batch("ended" if done else "in_progress"))
        if path == "/v1/messages/batches/msgbatch_1/results":
            lines = []
            for item in reversed(self.items):  # results come back out of order
                prompt = item["params"]["messages"][0]["content"]
                if "broken" in prompt:
                    result = {"type": "errored", "error": error_body("invalid_request_error",
                                                                     "bad input")}
                else:
                    result = {"type": "succeeded", "message": message(f"summary of {prompt}")}
                lines.append(json.dumps({"custom_id": item["custom_id"], "result": result}))
            return httpx2.Response(200, content="\n".join(lines).encode(),
                                   headers={"content-type": "application/binary"})
        return httpx2.Response(404, json=error_body("not_found_error", path))


def test_batch_lifecycle_maps_results_and_errors_at_half_price(tmp_path):
    server = BatchServer(polls_before_end=1)
    client, _ = make(server, tmp_path, poll_sleep=lambda s: None)
    reqs = [LLMRequest("first", label="c1"), LLMRequest("broken one", label="c2"),
            LLMRequest("third", label="c3")]
    results = client.complete_many(reqs, batch=True)
    assert server.created == 1 and server.polls >= 2
    assert results[0].text == "summary of first" and results[2].text == "summary of third"
    assert isinstance(results[1], LLMError) and "c2" in str(results[1])
    assert results[0].batch and results[0].cost_usd == pytest.approx(
        estimate_cost(MODEL, 100, 20, batch=True))
    assert results[0].cost_usd == pytest.approx(estimate_cost(MODEL, 100, 20) / 2)


def test_batch_resumes_polling_after_restart_without_resubmitting(tmp_path):
    server = BatchServer(polls_before_end=10**6)
    first, _ = make(server, tmp_path)
    reqs = [LLMRequest("alpha", label="a"), LLMRequest("beta", label="b")]
    batch_id = first.submit_batch(reqs)
    assert first.poll_batch(batch_id) == "in_progress"
    first.close()  # the process "dies" here
    server.polls_before_end = 0
    second, _ = make(server, tmp_path, poll_sleep=lambda s: None)  # same cache db
    results = second.complete_many(reqs, batch=True)
    assert server.created == 1  # resumed, not resubmitted
    assert [r.text for r in results] == ["summary of alpha", "summary of beta"]
    # collected batches are closed: the next identical backfill is a new batch
    assert second.cache.open_batch("x") is None


def test_api_key_never_reaches_errors_cache_or_audit(tmp_path):
    script = Script(ok(error_body("authentication_error", f"invalid x-api-key {KEY}"), 401))
    client, _ = make(script, tmp_path)
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("x", label="conv-k"))
    assert KEY not in info.value.one_line() and "ANTHROPIC_API_KEY" in info.value.one_line()
    wire = script.headers[0]
    assert KEY in (wire.get("x-api-key", ""), wire.get("authorization", "").removeprefix("Bearer "))
    client, _ = make(Script(ok()), tmp_path)
    resp = client.complete(LLMRequest("y"))
    assert KEY not in json.dumps(resp.audit()) and KEY not in repr(client)
    assert KEY.encode() not in (tmp_path / "llm.sqlite").read_bytes()
