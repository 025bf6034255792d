"""One search answer in every door (CLI process, Python, HTTP process, MCP tools, explorer):
compact hits that say what they cover, the conversations' own passages beside them, tool
results within their budget, and a bad mode or limit refused."""
from __future__ import annotations

import json
import subprocess
from urllib.parse import quote

import pytest
from serve_helpers import request, synix_cmd

HIT_KEYS = {"snippet", "artifact_id", "layer", "level", "score", "title", "date", "message_range",
            "covers", "sources", "provenance", "pii"}
PASSAGE_KEYS = {"snippet", "artifact_id", "score", "conversation_id", "title", "date",
                "message_range"}


@pytest.fixture(scope="module")
def service(served_project):
    from synix_assets.app.memory import MemoryService

    svc = MemoryService(served_project)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def tools(service):
    from synix_assets.serve.tools import memory_tools

    return {t.__name__: t for t in memory_tools(service)}


def _cli(project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(synix_cmd("-p", str(project.root), *args), capture_output=True,
                          text=True, timeout=120)


def _answers(served_project, server, tools, query: str, limit: int) -> dict[str, dict]:
    import synix

    cli = _cli(served_project, "search", query, "--json", "--limit", str(limit))
    assert cli.returncode == 0, cli.stderr
    status, _, body = request(server, "GET", f"/v1/search?q={quote(query)}&limit={limit}")
    assert status == 200
    return {"cli": json.loads(cli.stdout),
            "python": synix.open(str(served_project.root)).search(query, limit=limit).to_json(),
            "http": json.loads(body),
            "mcp": tools["search_memories"](query, limit=limit)}


@pytest.fixture(scope="module")
def unsummarised(served_project) -> str:
    """A word of the conversations that no summary holds."""
    import re

    from synix_resources.search.index import SearchIndex
    from synix_resources.search.query import parse_query

    store = served_project.open_store(read_only=True)
    index = SearchIndex(served_project.search, embeddings=False)
    try:
        for art in store.list_layer("transcripts"):
            for word in sorted(set(re.findall(r"[a-z]{7,}", art.content.lower()))):
                if index.rows.lacking_terms(parse_query(word)):
                    return word
    finally:
        index.close()
        store.close()
    raise AssertionError("every word of the demo conversations is in a summary")


def test_every_door_answers_with_compact_hits_and_the_conversations_passages(served_project, server, tools,
                                                                              unsummarised):
    # "marathon" is in the summaries; the other word only in a conversation: passages come
    answers = _answers(served_project, server, tools, f"marathon {unsummarised}", 5)
    shapes = set()
    for door, data in answers.items():
        assert data["hits"] and data["passages"], door
        for hit in data["hits"]:
            assert set(hit) == HIT_KEYS, door
            assert len(json.dumps(hit)) <= 2048, (door, hit["artifact_id"])
            assert hit["covers"]["conversations"] >= len(hit["sources"]) and len(hit["sources"]) <= 3
        for passage in data["passages"]:
            assert set(passage) == PASSAGE_KEYS, door
            assert passage["conversation_id"] and passage["date"] and passage["message_range"]
            assert passage["snippet"]
        shapes.add(json.dumps([h["artifact_id"] for h in data["hits"]]))
    assert len(shapes) == 1  # the same answer through every door


def test_passages_come_only_when_the_summaries_lack_the_words_except_in_the_explorer(service):
    held = service.search("marathon", limit=5)
    assert held["hits"] and "passages" not in held  # the summaries hold the word
    assert service.search("marathon", limit=5, passages=True)["passages"]


def test_the_explorer_lists_the_same_passages_under_the_hits(server, service):
    passages = service.search("marathon", limit=30, passages=True)["passages"]
    status, _, body = request(server, "GET", "/explore?q=marathon")
    html = body.decode()
    assert status == 200 and "In the conversations" in html
    listed = html.split('id="passages"', 1)[1]
    for p in passages:
        assert f'data-id="{p["artifact_id"]}"' in listed
        assert f"messages {p['message_range'][0]}–{p['message_range'][1]}" in listed


def test_a_core_hit_counts_what_it_covers_and_lists_only_its_first_sources(service, tools):
    layers = {l["layer"]: l["records"] for l in service.layers()}
    core = service.memory_map()["core"][0]
    word = max(service.record(core["artifact_id"])["content"].split()[:40], key=len).strip(".,:;()")
    hit = tools["search_memories"](word, step=["core"], limit=1)["hits"][0]
    assert hit["covers"]["conversations"] == layers["transcripts"] > 3
    assert len(hit["sources"]) == 3 and len(hit["provenance"]) == 3
    assert len(json.dumps(hit)) <= 2048
    # the whole tree stays one call away
    assert len(service.leaves(hit["artifact_id"])["leaves"]) == layers["transcripts"]


def test_tool_results_stay_within_their_budget_and_say_what_they_cut(tools):
    from synix_assets.serve.budget import TOOL_RESULT_CHARS

    listing = tools["list_layer"]("transcripts", per_page=200)
    assert len(json.dumps(listing, ensure_ascii=False)) <= TOOL_RESULT_CHARS
    assert "of records" in listing["cut"] and "smaller limit" in listing["cut"]
    small = tools["list_layer"]("core")
    assert "cut" not in small


def test_a_bad_mode_or_limit_is_refused_in_python_and_on_the_command_line(served_project):
    import synix

    pipeline = synix.open(str(served_project.root))
    for bad in (0, -1):
        with pytest.raises(ValueError, match="limit must be 1 or more"):
            pipeline.search("marathon", limit=bad)
    with pytest.raises(TypeError, match="whole number"):
        pipeline.search("marathon", limit="5")
    with pytest.raises(ValueError, match=r"unknown search mode 'hybird' — use one of fts, semantic, hybrid"):
        pipeline.search("marathon", mode="hybird")
    cli = _cli(served_project, "search", "marathon", "--limit", "0")
    assert cli.returncode != 0 and "Traceback" not in cli.stderr and "limit" in cli.stderr


def test_a_result_over_budget_loses_its_last_list_items_then_the_ends_of_long_texts():
    from synix_assets.serve.budget import fit

    hits = [{"artifact_id": f"h{i}", "snippet": "x" * 300} for i in range(40)]
    cut = fit({"query": "q", "hits": hits}, 3000)
    assert len(json.dumps(cut, ensure_ascii=False)) <= 3000 and cut["hits"] == hits[:len(cut["hits"])]
    assert f"{40 - len(cut['hits'])} items of hits" in cut["cut"]
    one = fit({"content": "y" * 10_000, "id": "r1"}, 2000)
    assert len(json.dumps(one, ensure_ascii=False)) <= 2000 and one["id"] == "r1" and one["content"].endswith("…")
    assert "the end of 1 long text" in one["cut"]
    assert fit({"small": [1, 2]}, 2000) == {"small": [1, 2]}
