"""openai-compatible provider against a loopback `/v1/chat/completions` stub server."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from synix_resources.errors import LLMConfigError, LLMError, LLMRefusal
from synix_resources.llm.openai_compat import OpenAICompatClient, completions_url
from synix_resources.llm.retry import RetryPolicy
from synix_resources.llm.types import LLMRequest

KEY = "sk-openai-SECRET-987654321"


class Stub:
    def __init__(self):
        self.replies: list[tuple[int, dict, dict]] = []
        self.received: list[tuple[str, dict, dict]] = []


@pytest.fixture
def server():
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.received.append((self.path, dict(self.headers), body))
            echo = completion(f"echo {body['messages'][-1]['content']}")
            status, payload, headers = stub.replies.pop(0) if stub.replies else (200, echo, {})
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            """Silenced: the default writes every request to stderr."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield stub
    httpd.shutdown()
    httpd.server_close()


def completion(text, finish="stop"):
    return {"id": "c1", "object": "chat.completion", "model": "llama3.1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}


def client_for(server, **kw):
    waits: list[float] = []
    client = OpenAICompatClient(model="llama3.1", base_url=server.url, api_key=kw.pop("key", KEY),
                                retry=RetryPolicy(max_attempts=kw.pop("max_attempts", 4),
                                                  sleep=waits.append), **kw)
    return client, waits


def test_chat_completion_round_trip_with_system_prompt_and_usage(server):
    client, _ = client_for(server)
    resp = client.complete(LLMRequest("hello there", system="be brief", label="c1",
                                      temperature=0.1, max_tokens=99))
    path, headers, body = server.received[0]
    assert path == "/v1/chat/completions"
    assert body["messages"] == [{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "hello there"}]
    assert body["temperature"] == 0.1 and body["max_tokens"] == 99 and body["model"] == "llama3.1"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert resp.text == "echo hello there" and resp.provider == "openai-compatible"
    assert (resp.input_tokens, resp.output_tokens) == (42, 7)
    assert resp.cost_usd == 0.0  # a loopback server is your own hardware


def test_429_and_503_are_retried_honouring_retry_after(server):
    server.replies = [(429, {"error": "slow"}, {"Retry-After": "3"}), (503, {"error": "down"}, {})]
    client, waits = client_for(server)
    resp = client.complete(LLMRequest("x"))
    assert resp.attempts == 3 and waits[0] == 3.0 and len(waits) == 2


def test_401_fails_at_once_with_fix_and_no_key_in_message(server):
    server.replies = [(401, {"error": f"bad key {KEY}"}, {})]
    client, waits = client_for(server)
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("x", label="conv-9"))
    text = info.value.one_line()
    assert info.value.status == 401 and waits == [] and "conv-9" in text
    assert "OPENAI_API_KEY" in text and KEY not in text


def test_content_filter_is_a_refusal(server):
    server.replies = [(200, completion("", finish="content_filter"), {})]
    client, _ = client_for(server)
    with pytest.raises(LLMRefusal):
        client.complete(LLMRequest("x"))


def test_unreachable_server_is_retried_then_reported():
    client = OpenAICompatClient(model="m", base_url="http://127.0.0.1:9/v1", timeout_s=1,
                                retry=RetryPolicy(max_attempts=2, sleep=lambda s: None))
    with pytest.raises(LLMError) as info:
        client.complete(LLMRequest("x", label="conv-net"))
    assert "2 attempts" in str(info.value) and "conv-net" in str(info.value)


def test_base_url_forms_and_config_errors():
    assert completions_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert completions_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    with pytest.raises(LLMConfigError):
        OpenAICompatClient(model="", base_url="http://h")
    with pytest.raises(LLMConfigError):
        OpenAICompatClient(model="m", base_url="localhost:11434")
