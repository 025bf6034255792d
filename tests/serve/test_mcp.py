"""`synix mcp` through the official SDK's own client: over stdio (listing and calling every
tool, bad calls answered as tool errors) and over streamable HTTP behind the guard."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time

from serve_helpers import free_port, request, stop, synix_cmd

TOOLS = {"get_map", "search_memories", "search_evidence", "get_memory", "follow", "lineage",
         "list_layer", "browse_timeline", "get_recent_memories", "get_brief",
         # what search_evidence / browse_timeline read before they were the ledger's
         "search_transcripts", "browse_records",
         # Syke's memory tools (issue 32, design 003 names since issue 42): reads
         "get_memory_history", "follow_links", "cross_reference", "get_memex", "list_active_memories"}
# served only with `synix mcp --writes` (issue 42)
WRITE_TOOLS = {"create_memory", "update_memory", "supersede_memory", "deactivate_memory", "create_link",
               "append_events"}


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def _exercise(session) -> dict:
    """List the tools, call every one with real arguments, and two bad calls."""
    await session.initialize()
    listed = await session.list_tools()
    out = {"tools": {t.name: t for t in listed.tools}}

    async def call(name, **args):
        result = await session.call_tool(name, args)
        return result, _text(result)

    res, text = await call("get_map")
    the_map = json.loads(text)
    core_id = the_map["core"][0]["artifact_id"]
    res, text = await call("search_memories", query="marathon", limit=3)
    hits = json.loads(text)["hits"]
    episode_id = hits[0]["artifact_id"]
    out["calls"] = {
        "get_map": the_map,
        "search_memories": hits,
        "search_evidence": json.loads((await call("search_evidence", query="calf raises"))[1]),
        "search_transcripts": json.loads((await call("search_transcripts", query="calf raises"))[1]),
        "get_memory": json.loads((await call("get_memory", record_id=episode_id))[1]),
        "follow": json.loads((await call("follow", record_id=core_id))[1]),
        "lineage": json.loads((await call("lineage", record_id=episode_id))[1]),
        "list_layer": json.loads((await call("list_layer", layer="episodes", per_page=5, page=2))[1]),
        "browse_timeline": json.loads((await call("browse_timeline", since="2025-03", before="2025-04"))[1]),
        "browse_records": json.loads((await call("browse_records", since="2025-03", until="2025-03-31"))[1]),
        "get_recent_memories": json.loads((await call("get_recent_memories", limit=2))[1]),
    }
    out["missing"] = await call("get_memory", record_id="episodes-0000000000000000")
    out["bad_limit"] = await call("search_memories", query="x", limit=0)
    out["bad_args"] = await call("search_memories", limit=3)  # no query
    return out


def _check(out: dict) -> None:
    assert set(out["tools"]) == TOOLS and not WRITE_TOOLS & set(out["tools"])
    for tool in out["tools"].values():
        assert tool.description and tool.input_schema["type"] == "object"
    assert out["tools"]["search_memories"].input_schema["required"] == ["query"]
    calls = out["calls"]
    assert calls["get_map"]["core"][0]["layer"] == "core"
    assert "Marathon" in calls["search_memories"][0]["title"]
    assert calls["search_memories"][0]["sources"][0]["conversation_id"]
    event = calls["search_evidence"]["events"][0]  # the ledger's raw events (design 003's L1)
    assert event["id"].startswith("ev-") and "calf raises" in event["content"].lower()
    passage = calls["search_transcripts"]["hits"][0]
    assert passage["layer"] == "transcripts" and passage["message_range"]
    assert calls["get_memory"]["layer"] == "episodes" and calls["get_memory"]["audit"]["model"] == "fake-v1"
    assert {s["layer"] for s in calls["follow"]["sources"]} == {"monthly"}
    assert calls["lineage"]["parents"][0]["layer"] == "transcripts"
    assert calls["list_layer"]["page"] == 2 and len(calls["list_layer"]["records"]) == 5
    events = calls["browse_timeline"]["events"]
    assert events and all(e["timestamp"].startswith("2025-03") for e in events)
    items = [r for g in calls["browse_records"]["by_source"].values() for r in g]
    assert items and all(r["date"].startswith("2025-03") for r in items)
    assert len(calls["get_recent_memories"]["recent"]["episodes"]) == 2
    for key, words in (("missing", ("No artifact",)), ("bad_limit", ("limit",)), ("bad_args", ("query",))):
        result, text = out[key]
        assert result.is_error, key
        assert all(w in text for w in words) and "Traceback" not in text, (key, text)


def test_mcp_over_stdio_lists_and_calls_every_tool(served_project):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = synix_cmd("-p", str(served_project.root), "mcp")
    params = StdioServerParameters(command=cmd[0], args=cmd[1:],
                                   env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await asyncio.wait_for(_exercise(session), 120)

    _check(asyncio.run(main()))


def test_mcp_over_http_behind_the_guard(served_project, tmp_path):
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    log = open(tmp_path / "mcp.log", "wb")
    proc = subprocess.Popen(synix_cmd("-p", str(served_project.root), "mcp", "--transport", "http",
                                      "--port", str(port)), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline_ok = False
        for _ in range(300):
            try:
                request(port, "GET", "/nothing", timeout=2)
                deadline_ok = True
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.2)
        assert deadline_ok, (tmp_path / "mcp.log").read_text()

        async def main():
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
                async with ClientSession(read, write) as session:
                    return await asyncio.wait_for(_exercise(session), 120)

        _check(asyncio.run(main()))
        # The guard: a rebinding Host and a cross-origin page are refused before MCP sees them.
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        json_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        assert request(port, "POST", "/mcp", body=body,
                       headers={**json_headers, "Host": f"evil.example:{port}"})[0] == 403
        assert request(port, "POST", "/mcp", body=body,
                       headers={**json_headers, "Origin": "http://evil.example"})[0] == 403
        assert request(port, "POST", "/mcp", body=b"{}", headers={"Content-Type": "text/plain"})[0] == 403
    finally:
        stop(proc)
        log.close()
