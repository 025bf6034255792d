"""`synix ask`: the real anthropic SDK over a mocked HTTP transport (httpx2, the SDK's HTTP library) that plays a model issuing
tool calls; and the offline answer (best evidence, nothing generated)."""
from __future__ import annotations

import json
import os
import subprocess

import anthropic
import httpx2
import pytest
from serve_helpers import synix_cmd

from synix_assets.app.memory import BadRequest, MemoryService
from synix_assets.serve.ask import OFFLINE_NOTICE, ask


def _message(content: list[dict], stop_reason: str) -> dict:
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-test",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20}}


class ScriptedModel:
    """A model behind httpx2.MockTransport: searches, follows the best hit down, then answers
    citing the episode it found. Records every request body it was sent."""

    def __init__(self):
        self.requests: list[dict] = []

    def __call__(self, req: httpx2.Request) -> httpx2.Response:
        assert req.url.path == "/v1/messages"
        body = json.loads(req.content)
        self.requests.append(body)
        turn = len(self.requests)
        if turn == 1:
            return httpx2.Response(200, json=_message([
                {"type": "text", "text": "Let me search."},
                {"type": "tool_use", "id": "tu_1", "name": "search_memories",
                 "input": {"query": "marathon", "limit": 3}}], "tool_use"))
        results = body["messages"][-1]["content"]
        if turn == 2:
            hits = json.loads(results[0]["content"])["hits"]
            self.episode = hits[0]["artifact_id"]
            return httpx2.Response(200, json=_message([
                {"type": "tool_use", "id": "tu_2", "name": "get_memory", "input": {"record_id": self.episode}},
                {"type": "tool_use", "id": "tu_3", "name": "get_memory", "input": {"record_id": "nope-0000000000000000"}},
            ], "tool_use"))
        return httpx2.Response(200, json=_message([
            {"type": "text", "text": f"You are training for the San Francisco Marathon [{self.episode}]."}],
            "end_turn"))


@pytest.fixture
def service(served_project):
    svc = MemoryService(served_project)
    yield svc
    svc.close()


def test_ask_navigates_with_tools_and_cites_records_and_conversations(service):
    model = ScriptedModel()
    client = anthropic.Anthropic(api_key="test-key", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    result = ask(service, "Which marathon am I training for?", client=client, model="claude-test")
    assert result["generated"] is True and "San Francisco Marathon" in result["answer"]
    assert [s["tool"] for s in result["steps"]] == ["search_memories", "get_memory", "get_memory"]
    assert result["steps"][2]["error"].startswith("No artifact")  # a bad id comes back to the model
    cite = result["citations"][0]
    assert cite["artifact_id"] == model.episode and cite["layer"] == "episodes"
    assert cite["sources"][0]["conversation_id"] and cite["sources"][0]["title"]
    first = model.requests[0]
    assert {t["name"] for t in first["tools"]} >= {"search_memories", "search_evidence", "get_map", "follow"}
    assert "MAP:" in first["system"] and "core" in first["system"]  # the map is read first
    # The tool results the model saw are the service's real answers.
    second = model.requests[1]["messages"][-1]["content"][0]
    assert second["type"] == "tool_result" and "Marathon" in second["content"]
    third = model.requests[2]["messages"][-1]["content"]
    assert third[1]["is_error"] is True
    assert result["usage"] == {"input_tokens": 300, "output_tokens": 60}


def test_ask_without_a_model_returns_evidence_and_says_nothing_was_generated(service):
    result = ask(service, "marathon training", offline=True)
    assert result["generated"] is False and result["answer"] is None
    assert result["notice"] == OFFLINE_NOTICE and "no answer was generated" in result["notice"]
    kinds = {e["kind"] for e in result["evidence"]}
    assert kinds == {"memory", "transcript"}
    passage = next(e for e in result["evidence"] if e["kind"] == "transcript")
    assert passage["message_range"] and passage["sources"][0]["conversation_id"]
    with pytest.raises(BadRequest):
        ask(service, "  ", offline=True)


def test_ask_model_failure_is_one_line(service):
    client = anthropic.Anthropic(api_key="k", max_retries=0, http_client=httpx2.Client(
        transport=httpx2.MockTransport(lambda req: httpx2.Response(
            401, json={"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}))))
    from synix_resources.errors import LLMError

    with pytest.raises(LLMError) as err:
        ask(service, "marathon?", client=client)
    assert "failed" in err.value.one_line() and "\n" not in err.value.one_line()


def test_synix_ask_cli_offline_prints_evidence_as_json(served_project):
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY")}
    out = subprocess.run(synix_cmd("-p", str(served_project.root), "ask", "kayak trip", "--json"),
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["generated"] is False and data["evidence"]
    text = subprocess.run(synix_cmd("-p", str(served_project.root), "ask", "kayak trip"),
                          capture_output=True, text=True, env=env, timeout=120)
    assert text.returncode == 0 and "no answer was generated" in " ".join(text.stdout.split())
