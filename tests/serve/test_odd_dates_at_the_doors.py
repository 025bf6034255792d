"""A date parameter Synix cannot use (issue 40) — at the edge of the calendar with an offset
(`9999-12-31T23:59:59-14:00` is year 10000 in UTC), a 5,000-digit number, not a date — is
refused at every door with one line naming the parameter and the accepted form: HTTP 400 on a
real `synix serve`, a usage error (exit 2) in the CLI, a tool error over MCP (the official SDK's
client), `InvalidTime` in Python. Nothing is written for a refused write."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
from agent_memory_helpers import built_project, transcripts  # noqa: E402

ODD = {"9999-offset": "9999-12-31T23:59:59-14:00", "0001-offset": "0001-01-01T00:00:00+14:00",
       "5000-digits": "7" * 5000}
FORM = "use ISO 8601 between 0001 and 9999 in UTC"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return built_project(tmp_path_factory.mktemp("odd_dates"))


@pytest.fixture(scope="module")
def memory_id(project) -> str:
    from synix_assets.engine.agent_memory import MemoryWriter

    return MemoryWriter(project).create_memory("Sam keeps bees on the roof",
                                               evidence=[transcripts(project)[0].artifact_id],
                                               valid_from="2024-04-01")["memory_id"]


def _ops(paths) -> int:
    """How many ops the branch's memory log holds."""
    import sqlite3

    db = sqlite3.connect(f"file:{paths.memory_log}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM ops").fetchone()[0]
    finally:
        db.close()


@pytest.fixture(scope="module")
def server(project, tmp_path_factory):
    port = free_port()
    log_path = tmp_path_factory.mktemp("odd_dates_serve") / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(synix_cmd("-p", str(project.root), "serve", "--writes", "--port", str(port)),
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        yield port
    finally:
        stop(proc)


def _get_routes(project, memory_id) -> list[str]:
    record = transcripts(project)[0].artifact_id
    return ["/v1/search?q=bees&as_of={}", f"/v1/records/{record}?as_of={{}}", "/v1/brief?as_of={}",
            f"/v1/memories/{memory_id}?as_of={{}}", "/v1/cross_reference?q=bees&as_of={}"]


@pytest.mark.parametrize("odd", sorted(ODD))
def test_every_get_route_refuses_an_unusable_as_of_with_a_400_naming_it(project, memory_id, server, odd):
    for route in _get_routes(project, memory_id):
        # the same route with the last usable instant answers
        status, _, raw = request(server, "GET", route.format(quote("9999-12-31T23:59:59Z")))
        assert status == 200, (route, raw[:300])
        status, _, raw = request(server, "GET", route.format(quote(ODD[odd])))
        error = json.loads(raw)["error"]
        assert status == 400, (route, error)
        assert error.startswith("as_of '") and FORM in error and "\n" not in error, error
        assert "internal error" not in error


def test_the_explorer_page_answers_an_unusable_as_of_with_its_error_page_not_a_500(server):
    status, _, raw = request(server, "GET", f"/explore?q=bees&as_of={quote(ODD['9999-offset'])}")
    page = raw.decode()
    assert status == 400 and "internal error" not in page
    assert "as_of &#39;9999-12-31T23:59:59-14:00&#39; is outside the years 0001-9999 in UTC" in page


def test_post_memories_refuses_an_unusable_valid_from_and_logs_nothing(project, memory_id, server):
    before = _ops(project)
    for odd in ODD.values():
        body = json.dumps({"content": "Sam sells honey", "valid_from": odd}).encode()
        status, _, raw = request(server, "POST", "/v1/memories", body=body,
                                 headers={"Content-Type": "application/json", "X-Synix-Request": "1"})
        error = json.loads(raw)["error"]
        assert status == 400 and error.startswith("valid_from '") and FORM in error, error
    assert _ops(project) == before


def test_search_since_at_the_edge_of_the_calendar_is_a_400_naming_since(server):
    status, _, raw = request(server, "GET", f"/v1/search?q=bees&since={quote(ODD['9999-offset'])}")
    assert status == 400
    assert json.loads(raw)["error"] == ("since '9999-12-31T23:59:59-14:00' is outside the years 0001-9999 "
                                        "in UTC — use YYYY, YYYY-MM, YYYY-MM-DD or an ISO date-time like "
                                        "2024-03-05T14:30:00Z")


@pytest.mark.parametrize("args", [
    ["memory", "get_memory", "{mem}", "--as-of", "{odd}"],
    ["memory", "cross_reference", "bees", "--as-of", "{odd}"],
    ["memory", "get_brief", "bees", "--as-of", "{odd}"],
    ["memory", "create_memory", "Sam sells honey", "--valid-from", "{odd}"],
    ["search", "bees", "--as-of", "{odd}"],
    ["get", "{mem}", "--as-of", "{odd}"],
], ids=lambda a: " ".join(a[:2]))
def test_cli_refuses_an_unusable_date_option_as_a_usage_error_naming_it(project, memory_id, args):
    before = _ops(project)
    option = args[-2]
    argv = [a.format(mem=memory_id, odd=ODD["9999-offset"]) for a in args]
    proc = subprocess.run(synix_cmd("-p", str(project.root), *argv), capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})
    assert proc.returncode == 2, proc.stderr
    assert (f"Error: Invalid value for '{option}': the value '9999-12-31T23:59:59-14:00' is outside "
            f"the years 0001-9999 in UTC — {FORM}") in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert _ops(project) == before


def test_mcp_tools_refuse_an_unusable_date_with_a_tool_error_naming_the_argument(project, memory_id):
    from mcp import Client

    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.mcp_server import build_server

    calls = [("get_memory", {"record_id": memory_id}, "as_of"),
             ("search_memories", {"query": "bees"}, "as_of"),
             ("cross_reference", {"query": "bees"}, "as_of"),
             ("get_brief", {"query": "bees"}, "as_of"),
             ("create_memory", {"content": "Sam sells honey"}, "valid_from")]

    async def session(server) -> list:
        out = []
        async with Client(server) as client:
            for name, args, param in calls:
                good = await client.call_tool(name, {**args, param: "2025-03-01"})
                assert not good.is_error, (name, good.content)
                for odd in ODD.values():
                    result = await client.call_tool(name, {**args, param: odd})
                    out.append((name, param, result.is_error,
                                "".join(getattr(c, "text", "") for c in result.content)))
        return out

    service = MemoryService(project)
    try:
        answers = asyncio.run(session(build_server(service, writes=True)))
    finally:
        service.close()
    assert len(answers) == len(calls) * len(ODD)
    for name, param, is_error, text in answers:
        assert is_error and f"{param} '" in text and FORM in text, (name, text)
        assert "\n" not in text and "Traceback" not in text


def test_python_api_raises_invalid_time_naming_the_parameter(project, memory_id):
    import synix
    from synix_resources.errors import InvalidTime

    pipeline = synix.open(project.root)
    before = _ops(project)
    with pytest.raises(InvalidTime, match=r"^as_of '9999-12-31T23:59:59-14:00' is outside"):
        pipeline.get_memory(memory_id, as_of=ODD["9999-offset"])
    with pytest.raises(InvalidTime, match=r"^as_of '7777"):
        pipeline.search("bees", as_of=ODD["5000-digits"])
    with pytest.raises(InvalidTime, match=r"^valid_from '0001-01-01T00:00:00\+14:00' is outside"):
        pipeline.create_memory("Sam sells honey", valid_from=ODD["0001-offset"])
    assert _ops(project) == before


def test_cli_search_since_past_9999_in_utc_is_one_line_naming_the_option(project):
    proc = subprocess.run(synix_cmd("-p", str(project.root), "search", "bees", "--since", ODD["9999-offset"]),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == ("error: --since '9999-12-31T23:59:59-14:00' is outside the years 0001-9999 "
                                   "in UTC — use YYYY, YYYY-MM, YYYY-MM-DD or an ISO date-time like "
                                   "2024-03-05T14:30:00Z")
