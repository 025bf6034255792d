"""The search filters (period, conversation, since/until with date-times) give the same known
answers through every interface: the Python API, `synix search --json`, HTTP `/v1/search` on a
real server and the MCP tools over the SDK's stdio client; bad values are one line in each.

Known answers come from the bundled demo exports: five conversations mention sourdough —
"Rye sourdough with Gus" (claude, 2025-01-28T20:45:03Z), "Sourdough starter feeding schedule"
(chatgpt, 2025-02-02T17:05:07Z), "Sourdough schedule around the move" (claude,
2025-05-05T08:15:03Z), "Moving logistics Portland to SF" (chatgpt, 2025-05-10T10:30:07Z) and
"Taper plan for July 27" (chatgpt, 2025-06-18T06:50:07Z). Semantic ranking finds every
conversation by meaning, so there the check is that every hit passes the filter."""
from __future__ import annotations

import asyncio
import json
import os
import urllib.parse

from click.testing import CliRunner
from serve_helpers import request, synix_cmd

RYE = "25a06837-6c49-5f68-a663-3de48903a077"
STARTER = "349f63be-1a78-572f-b8a4-706de305ea3f"
MOVE = "ca8eccfe-18a2-535c-9b0d-dc766bd9ec18"
LOGISTICS = "2ba762ab-21b1-5afa-be72-d2d421a810b0"
TAPER = "ea4ab8ce-9f2e-5073-95fc-5d5f20d43bdf"

# (filters, the conversations of the transcripts a full-text search for "sourdough" returns,
#  what every hit of any mode satisfies)
CASES = [
    ({"period": "2025-05"}, {MOVE, LOGISTICS}, lambda h: h["date"].startswith("2025-05")),
    ({"period": "2025-01"}, {RYE}, lambda h: h["date"].startswith("2025-01")),
    ({"conversation": STARTER}, {STARTER}, lambda h: conversations([h]) == {STARTER}),
    ({"since": "2025-01-28T20:45:04Z"}, {STARTER, MOVE, LOGISTICS, TAPER},
     lambda h: h["date"] >= "2025-01-28T20:45:04"),
    ({"until": "2025-02-02T17:05:06Z"}, {RYE}, lambda h: h["date"] <= "2025-02-02T17:05:06"),
    ({"since": "2025-02-02T18:05:07+01:00", "until": "2025-02-02"}, {STARTER},
     lambda h: h["date"].startswith("2025-02-02T17:05:07")),
]


def conversations(hits: list[dict]) -> set[str]:
    return {s["conversation_id"] for h in hits for s in h["sources"]}


def get(port: int, path: str, **params) -> tuple[int, dict]:
    status, _, body = request(port, "GET", f"{path}?{urllib.parse.urlencode(params)}")
    return status, json.loads(body)


def test_http_search_filters_give_the_known_answers_in_every_mode(server):
    for filters, expected, passes in CASES:
        status, data = get(server, "/v1/search", q="sourdough", layers="transcripts", limit=20,
                           **filters)
        assert status == 200 and conversations(data["hits"]) == expected, filters
        for mode in ("semantic", "hybrid"):
            status, data = get(server, "/v1/search", q="sourdough", layers="transcripts",
                               mode=mode, limit=20, **filters)
            assert status == 200 and data["hits"] and all(map(passes, data["hits"])), (filters, mode)
    status, data = get(server, "/v1/search", q="sourdough", conversation=STARTER, limit=20)
    assert data["hits"] and all(STARTER in conversations([h]) for h in data["hits"])
    # a rollup has its own period, and is found by each conversation it was built from
    status, data = get(server, "/v1/search", q="episode", layers="monthly", period="2025-05")
    assert [h["title"] for h in data["hits"]] == ["monthly 2025-05"]
    status, data = get(server, "/v1/search", q="episode", layers="monthly", conversation=TAPER)
    assert [h["title"] for h in data["hits"]] == ["monthly 2025-06"]
    status, data = get(server, "/v1/search", q="july", layers="episodes", conversation=TAPER)
    assert [h["title"] for h in data["hits"]] == ["Taper plan for July 27"]
    status, data = get(server, "/v1/search", q="sourdough", evidence="true", conversation=MOVE)
    assert data["hits"] and {h["layer"] for h in data["hits"]} == {"transcripts"}
    assert conversations(data["hits"]) == {MOVE} and all(h["message_range"] for h in data["hits"])


def test_http_bad_filter_values_are_400_with_one_line(server):
    for params, words in (({"period": "2025-13"}, ("period '2025-13'", "no month 13", "YYYY-MM")),
                          ({"conversation": " "}, ("conversation",)),
                          ({"since": "2025-02T10:00"}, ("since", "no day")),
                          ({"evidence": "true", "period": "May"}, ("period 'May'",))):
        status, data = get(server, "/v1/search", q="sourdough", **params)
        assert status == 400 and all(w in data["error"] for w in words), data
        assert "\n" not in data["error"]
    # the layer listing refuses the same value with the same check
    status, data = get(server, "/v1/layers/episodes", period="2025-13")
    assert status == 400 and "no month 13" in data["error"], data


def test_python_api_search_filters_give_the_known_answers(served_project):
    import synix
    from synix_resources.errors import SearchError

    pipeline = synix.open(served_project.root)
    for filters, expected, _ in CASES:
        hits = pipeline.search("sourdough", step="transcripts", limit=20, **filters)
        assert conversations([h.to_json() for h in hits]) == expected, filters
    exact = pipeline.search("sourdough", exact=True, period="2025-05")
    assert conversations([h.to_json() for h in exact]) == {MOVE, LOGISTICS}
    leaves = pipeline.search("sourdough", leaves=True, conversation=RYE)
    assert leaves and conversations([h.to_json() for h in leaves]) == {RYE}
    try:
        pipeline.search("sourdough", period="2025-13")
    except SearchError as exc:
        assert "is not a period (there is no month 13)" in exc.one_line()
    else:
        raise AssertionError("a bad period was accepted")


def _cli(project, *args):
    from synix_assets.cli.main import main

    return CliRunner().invoke(main, ["-p", str(project.root), "search", "sourdough", *args],
                              env={"SYNIX_LLM_PROVIDER": "fake"})


def test_cli_search_json_filters_give_the_known_answers(served_project):
    for filters, expected, _ in CASES:
        args = [a for k, v in filters.items() for a in (f"--{k}", v)]
        result = _cli(served_project, "--step", "transcripts", "--limit", "20", "--json", *args)
        assert result.exit_code == 0, result.output
        assert conversations(json.loads(result.stdout)["hits"]) == expected, filters
    result = _cli(served_project, "--period", "2025-13")
    assert result.exit_code == 1 and "Traceback" not in result.output
    line = " ".join(result.stderr.split())
    assert line.startswith("error: --period '2025-13' is not a period") and "YYYY-MM" in line
    assert len(result.stderr.strip().splitlines()) == 1


def test_mcp_search_tools_take_the_filters(served_project):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = synix_cmd("-p", str(served_project.root), "mcp")
    params = StdioServerParameters(command=cmd[0], args=cmd[1:],
                                   env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})

    async def calls(session):
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        out = {"schema": tools["search_memories"].input_schema["properties"]}
        for name, args in (
                ("period", {"layers": ["transcripts"], "period": "2025-05"}),
                ("conversation", {"layers": ["transcripts"], "conversation": STARTER}),
                ("dates", {"layers": ["transcripts"], "since": "2025-01-28T20:45:04Z"}),
                ("unscoped", {"conversation": RYE})):
            result = await session.call_tool("search_memories", {"query": "sourdough",
                                                                 "limit": 20, **args})
            out[name] = json.loads("".join(c.text for c in result.content))["hits"]
        result = await session.call_tool("search_transcripts", {"query": "sourdough",
                                                             "conversation": MOVE})
        out["evidence"] = json.loads("".join(c.text for c in result.content))["hits"]
        out["bad"] = await session.call_tool("search_memories", {"query": "sourdough",
                                                                 "period": "2025-13"})
        return out

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await asyncio.wait_for(calls(session), 120)

    out = asyncio.run(main())
    assert {"period", "conversation", "since", "until"} <= set(out["schema"])
    assert conversations(out["period"]) == {MOVE, LOGISTICS}
    assert conversations(out["conversation"]) == {STARTER}
    assert conversations(out["dates"]) == {STARTER, MOVE, LOGISTICS, TAPER}
    assert out["unscoped"] and all(RYE in conversations([h]) for h in out["unscoped"])
    assert out["evidence"] and conversations(out["evidence"]) == {MOVE}
    bad = "".join(c.text for c in out["bad"].content)
    assert out["bad"].is_error and "no month 13" in bad and "Traceback" not in bad, bad
