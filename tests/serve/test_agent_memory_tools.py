"""Syke's memory tools end to end: every write and read tool through the official `mcp` SDK's
client (in-process transport) and every route through a real `synix serve` on 127.0.0.1."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
from agent_memory_helpers import built_project, transcripts  # noqa: E402

WRITE_TOOLS = {"create_memory", "update_memory", "supersede_memory", "deactivate_memory", "create_link"}
READ_TOOLS = {"get_memory_history", "follow_links", "cross_reference"}
TRANSCRIPT = os.environ.get("SYNIX_TOOL_TRANSCRIPT")  # where to write the session's calls, if set


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return built_project(tmp_path_factory.mktemp("syke_tools"))


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _session(server, evidence: list[str]) -> dict:
    from mcp import Client

    log, out = [], {}
    async with Client(server) as client:
        out["tools"] = {t.name: t for t in (await client.list_tools()).tools}

        async def call(name, **args):
            result = await client.call_tool(name, args)
            text = _text(result)
            log.append({"call": name, "arguments": args, "is_error": result.is_error, "output": text})
            return json.loads(text) if not result.is_error else text

        berlin = await call("create_memory", content="Alex lives in Berlin", evidence=[evidence[0]],
                            valid_from="2024-01-10")
        job = await call("create_memory", content="Alex works as a UX designer", evidence=[evidence[0]],
                         valid_from="2024-01-10")
        await call("update_memory", memory_id=job["memory_id"],
                   content="Alex works as a senior UX designer", valid_from="2024-09-01")
        lisbon = await call("supersede_memory", memory_id=berlin["memory_id"], content="Alex moved to Lisbon",
                            reason="moved in February", evidence=[evidence[1]], valid_from="2025-02-01")
        link = await call("create_link", source_id=lisbon["new_id"], target_id=job["memory_id"],
                          reason="took a remote design job after the move")
        side = await call("create_memory", content="Alex plans a trip to Porto", valid_from="2025-02-05")
        out["deactivated"] = await call("deactivate_memory", memory_id=side["memory_id"],
                                        reason="trip cancelled", valid_from="2025-02-20")
        out["history"] = await call("get_memory_history", memory_id=lisbon["new_id"])
        out["links"] = await call("follow_links", memory_id=job["memory_id"])
        out["xref"] = await call("cross_reference", query="Lisbon")
        out["then"] = await call("search_memories", query="lives in Berlin or Lisbon", as_of="2024-06-01")
        out["now"] = await call("search_memories", query="lives in Berlin or Lisbon", as_of="2025-03-01")
        out["old_then"] = await call("get_memory", record_id=berlin["memory_id"], as_of="2024-06-01")
        out["retired"] = await call("update_memory", memory_id=berlin["memory_id"], content="x")
        out["bad_id"] = await call("follow_links", memory_id="../etc/passwd")
        out["bad_time"] = await call("get_memory", record_id=berlin["memory_id"], as_of="yesterday")
        out["ids"] = {"berlin": berlin["memory_id"], "lisbon": lisbon["new_id"], "job": job["memory_id"],
                      "link": link["link_id"], "side": side["memory_id"]}
    out["log"] = log
    return out


def test_a_syke_session_over_mcp_writes_and_reads_with_every_tool(project):
    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.mcp_server import build_server

    evidence = [t.artifact_id for t in transcripts(project)[:2]]
    service = MemoryService(project)
    try:
        out = asyncio.run(_session(build_server(service, writes=True), evidence))
    finally:
        service.close()
    if TRANSCRIPT:
        Path(TRANSCRIPT).write_text(json.dumps(out["log"], indent=1, ensure_ascii=False))
    assert WRITE_TOOLS | READ_TOOLS <= set(out["tools"])
    assert out["tools"]["create_memory"].input_schema["required"] == ["content"]
    assert out["tools"]["create_memory"].annotations.read_only_hint is False
    ids = out["ids"]
    assert out["deactivated"]["applied"] is True and out["deactivated"]["op"] == "deactivate"
    chain = out["history"]["chain"]
    assert [m["memory_id"] for m in chain] == [ids["berlin"], ids["lisbon"]]
    assert chain[0]["state"] == "superseded" and chain[0]["retired_reason"] == "moved in February"
    assert out["links"]["links"][0]["reason"] == "took a remote design job after the move"
    assert out["links"]["links"][0]["memory"]["memory_id"] == ids["lisbon"]
    assert out["xref"]["memories"][0]["memory_id"] == ids["lisbon"]
    assert out["xref"]["memories"][0]["links"][0]["link_id"] == ids["link"]
    assert [m["memory_id"] for m in out["then"]["memories"]] == [ids["berlin"]]
    assert [m["memory_id"] for m in out["now"]["memories"]] == [ids["lisbon"]]
    assert out["old_then"]["content"] == "Alex lives in Berlin" and out["old_then"]["state_now"] == "superseded"
    for key, words in (("retired", "was superseded"), ("bad_id", "memory_id"), ("bad_time", "as_of")):
        assert isinstance(out[key], str) and words in out[key] and "Traceback" not in out[key], out[key]
        assert "\n" not in out[key]


@pytest.fixture(scope="module")
def server(project, tmp_path_factory):
    port = free_port()
    log_path = tmp_path_factory.mktemp("syke_serve") / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(synix_cmd("-p", str(project.root), "serve", "--writes", "--port", str(port)),
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        yield port
    finally:
        stop(proc)


def _post(port, path, body):
    status, _, raw = request(port, "POST", path, body=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json", "X-Synix-Request": "1"})
    return status, json.loads(raw)


def _get(port, path):
    status, _, raw = request(port, "GET", path)
    return status, json.loads(raw)


def test_every_memory_route_over_http_on_a_real_server(project, server):
    evidence = [t.artifact_id for t in transcripts(project)[:2]]
    status, made = _post(server, "/v1/memories", {"content": "Sam keeps bees on the roof",
                                                  "evidence": [evidence[0]], "valid_from": "2024-04-01"})
    assert status == 200 and made["applied"], made
    sam = made["memory_id"]
    assert _post(server, f"/v1/memories/{sam}/update",
                 {"content": "Sam keeps two bee hives on the roof", "valid_from": "2024-05-01"})[0] == 200
    status, moved = _post(server, f"/v1/memories/{sam}/supersede",
                          {"content": "Sam moved the bee hives to an allotment", "reason": "roof repairs",
                           "evidence": [evidence[1]], "valid_from": "2025-01-15"})
    assert status == 200
    status, honey = _post(server, "/v1/memories", {"content": "Sam sells honey at the market"})
    status, link = _post(server, "/v1/links", {"source_id": moved["new_id"], "target_id": honey["memory_id"],
                                               "reason": "the allotment hives make the honey"})
    assert status == 200 and link["link_id"].startswith("link-")
    status, gone = _post(server, f"/v1/memories/{honey['memory_id']}/deactivate", {"reason": "stopped selling"})
    assert status == 200 and gone["op"] == "deactivate"

    status, history = _get(server, f"/v1/memories/{sam}/history")
    assert status == 200 and [m["memory_id"] for m in history["chain"]] == [sam, moved["new_id"]]
    assert [v["content"] for v in history["chain"][0]["versions"]] == [
        "Sam keeps bees on the roof", "Sam keeps two bee hives on the roof"]
    status, links = _get(server, f"/v1/memories/{honey['memory_id']}/links")
    assert links["links"][0]["reason"] == "the allotment hives make the honey"
    status, then = _get(server, f"/v1/memories/{sam}?as_of=2024-04-15")
    assert status == 200 and then["content"] == "Sam keeps bees on the roof" and then["version"] == 1
    status, found = _get(server, "/v1/search?q=bee+hives&as_of=2024-06-01")
    assert status == 200 and [m["memory_id"] for m in found["memories"]] == [sam]
    assert found["memories"][0]["content"] == "Sam keeps two bee hives on the roof"
    status, found = _get(server, "/v1/search?q=bee+hives&as_of=2025-02-01")
    assert [m["memory_id"] for m in found["memories"]] == [moved["new_id"]]
    status, xref = _get(server, "/v1/cross_reference?q=allotment")
    assert status == 200 and xref["memories"][0]["memory_id"] == moved["new_id"]

    for method, path, body, code, words in (
            ("POST", f"/v1/memories/{sam}/update", {"content": "x"}, 400, "was superseded"),
            ("POST", "/v1/memories/mem-0000000000000000/deactivate", {"reason": "r"}, 404, "no memory"),
            ("POST", "/v1/memories", {"content": "x", "evidence": ["nope-123456"]}, 400, "names no record"),
            ("POST", "/v1/memories", {"content": "x", "colour": "red"}, 400, "colour"),
            ("GET", f"/v1/memories/{sam}?as_of=not-a-date", None, 400, "as_of"),
            ("GET", "/v1/memories/mem-zz/history", None, 400, "memory_id")):
        status, answer = _post(server, path, body) if method == "POST" else _get(server, path)
        assert status == code and words in answer["error"] and "\n" not in answer["error"], (path, answer)
