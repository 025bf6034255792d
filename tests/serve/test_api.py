"""The /v1 HTTP JSON API of a real `synix serve` process: every endpoint, good and bad input."""
from __future__ import annotations

import hashlib
import json

import pytest
from serve_helpers import request


def get(port: int, path: str, **headers) -> tuple[int, dict]:
    status, _, body = request(port, "GET", path, headers=headers or None)
    return status, json.loads(body)


def bad(port: int, path: str, status: int, *words: str) -> str:
    got, data = get(port, path)
    assert got == status, (path, data)
    line = data["error"]
    assert "\n" not in line and "Traceback" not in line
    for word in words:
        assert word in line, (path, line)
    return line


@pytest.fixture(scope="module")
def ids(server):
    """Some real ids from the served project."""
    _, core = get(server, "/v1/layers/core")
    _, episodes = get(server, "/v1/layers/episodes?per_page=200")
    _, transcripts = get(server, "/v1/layers/transcripts?per_page=200")
    return {"core": core["records"][0]["artifact_id"],
            "episode": episodes["records"][0]["artifact_id"],
            "transcript": transcripts["records"][0]["artifact_id"]}


def test_search_returns_hits_with_provenance_down_to_conversations(server):
    status, data = get(server, "/v1/search?q=marathon&limit=5")
    assert status == 200 and data["mode"] == "fts" and data["hits"]
    hit = data["hits"][0]
    assert "Marathon" in hit["title"] and hit["provenance"]
    assert hit["sources"][0]["conversation_id"] and hit["sources"][0]["message_range"]
    status, scoped = get(server, "/v1/search?q=marathon&layers=episodes&limit=3")
    assert status == 200 and {h["layer"] for h in scoped["hits"]} == {"episodes"}
    status, dated = get(server, "/v1/search?q=marathon&since=2025-02&until=2025-02-28")
    assert status == 200 and all(h["date"].startswith("2025-02") for h in dated["hits"])
    status, passages = get(server, "/v1/search?q=marathon&evidence=true&limit=3")
    assert status == 200 and passages["hits"] and all(h["layer"] == "transcripts" and h["message_range"]
                                                      for h in passages["hits"])


def test_search_bad_parameters_are_400_with_one_line_reason(server):
    bad(server, "/v1/search?q=", 400, "query is empty")
    bad(server, "/v1/search", 400, "q")
    bad(server, "/v1/search?q=x&mode=psychic", 400, "mode", "fts")
    bad(server, "/v1/search?q=x&limit=0", 400, "limit")
    bad(server, "/v1/search?q=x&limit=many", 400, "limit")
    bad(server, "/v1/search?q=x&since=last-week", 400, "since")
    bad(server, "/v1/search?q=x&since=2023-13-01", 400, "since", "no month 13")
    bad(server, "/v1/timeline?until=2023-02-30", 400, "until", "no day 30")
    bad(server, "/v1/search?q=x&layers=nope", 400, "nope")
    bad(server, "/v1/search?q=x&branch=experiment", 404, "branch", "main")


def test_record_sources_leaves_and_lineage(server, ids):
    status, rec = get(server, f"/v1/records/{ids['episode']}")
    assert status == 200 and rec["layer"] == "episodes" and rec["content"]
    assert rec["audit"]["model"] == "fake-v1" and rec["audit"]["rendered_prompt_hash"]
    assert rec["parents"][0]["layer"] == "transcripts" and rec["sources"][0]["conversation_id"]
    status, prefix = get(server, f"/v1/records/{ids['episode'][:-4]}")  # a unique prefix works
    assert status == 200 and prefix["artifact_id"] == ids["episode"]
    status, tr = get(server, f"/v1/records/{ids['transcript']}")
    assert tr["messages"] and tr["messages"][0]["index"] == 1 and tr["audit"] is None
    status, src = get(server, f"/v1/records/{ids['core']}/sources")
    assert status == 200 and {s["layer"] for s in src["sources"]} == {"monthly"}
    status, leaves = get(server, f"/v1/records/{ids['core']}/leaves?limit=100")
    assert status == 200 and len(leaves["leaves"]) == 25  # 24 demo conversations + the hostile one
    status, tree = get(server, f"/v1/records/{ids['core']}/lineage")
    assert status == 200 and tree["parents"][0]["layer"] == "monthly"
    assert tree["parents"][0]["parents"][0]["parents"][0]["layer"] == "transcripts"
    status, focused = get(server, f"/v1/records/{ids['core']}/lineage?q=marathon")
    assert status == 200 and len(focused["parents"]) + focused["hidden"] == len(tree["parents"])
    status, shallow = get(server, f"/v1/records/{ids['core']}/lineage?depth=1&per_node=3")
    assert status == 200 and len(shallow["parents"]) == 3 and shallow["hidden"] == 3
    assert all(p["parents"] == [] for p in shallow["parents"])
    bad(server, f"/v1/records/{ids['core']}/lineage?depth=0", 400, "depth")


def test_unknown_records_are_404_with_one_line_reason(server):
    for suffix in ("", "/sources", "/leaves", "/lineage"):
        bad(server, f"/v1/records/episodes-0000000000000000{suffix}", 404, "No artifact")
    bad(server, "/v1/records/ep", 404, "6")  # too short to be a prefix
    bad(server, "/v1/records/x/leaves?limit=0", 400, "limit")


def test_layers_are_paged_and_filtered(server):
    status, data = get(server, "/v1/layers")
    assert [l["layer"] for l in data["layers"]] == ["transcripts", "episodes", "monthly", "core"]
    assert {l["layer"]: l["records"] for l in data["layers"]}["episodes"] == 25
    _, p1 = get(server, "/v1/layers/episodes?per_page=10")
    _, p3 = get(server, "/v1/layers/episodes?per_page=10&page=3")
    assert (p1["total"], p1["pages"], len(p1["records"]), len(p3["records"])) == (25, 3, 10, 5)
    dates = [r["date"] for r in p1["records"]]
    assert dates == sorted(dates, reverse=True)  # newest first
    _, oldest = get(server, "/v1/layers/episodes?per_page=10&oldest_first=true")
    assert oldest["records"][0]["date"] <= dates[-1]
    _, march = get(server, "/v1/layers/episodes?period=2025-03")
    assert march["total"] and all(r["period"] == "2025-03" for r in march["records"])
    conv = march["records"][0]["conversation_id"]
    _, one = get(server, f"/v1/layers/transcripts?conversation={conv}")
    assert one["total"] == 1 and one["records"][0]["conversation_id"] == conv
    bad(server, "/v1/layers/nope", 404, "nope", "episodes")
    bad(server, "/v1/layers/episodes?per_page=0", 400, "per_page")
    bad(server, "/v1/layers/episodes?page=0", 400, "page")


def test_timeline_lists_conversations_in_a_window_by_source(server):
    status, data = get(server, "/v1/timeline?since=2025-03-01&until=2025-03-31")
    assert status == 200 and data["total"] >= 1
    items = [r for group in data["by_source"].values() for r in group]
    assert items and all(r["date"].startswith("2025-03") for r in items)
    assert [r["date"] for r in items] == sorted(r["date"] for r in items)
    bad(server, "/v1/timeline?until=tomorrow", 400, "until")
    bad(server, "/v1/timeline?layers=nope", 404, "nope")


def test_context_brief_map_and_pipeline(server, served_project):
    status, ctx = get(server, "/v1/context")
    assert status == 200 and ctx["text"] == (served_project.root / "context.md").read_text()
    assert ctx["records"] and ctx["records"][0].startswith("core-")
    status, brief = get(server, "/v1/brief?query=marathon&budget_tokens=600")
    assert status == 200 and brief["tokens"] <= 600
    kinds = [s["kind"] for s in brief["sections"]]
    assert kinds[0] == "core" and "recent" in kinds and "hit" in kinds
    hit = next(s for s in brief["sections"] if s["kind"] == "hit")
    assert hit["sources"][0]["conversation_id"] and hit["artifact_id"] in brief["text"]
    _, small = get(server, "/v1/brief?query=marathon&budget_tokens=150")
    assert small["tokens"] <= 150
    bad(server, "/v1/brief?budget_tokens=5", 400, "budget_tokens")
    status, the_map = get(server, "/v1/map")
    assert status == 200 and the_map["core"][0]["layer"] == "core" and "episodes" in the_map["recent"]
    status, graph = get(server, "/v1/pipeline")
    assert status == 200
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes["episodes"]["records"] == 25 and nodes["exports"]["kind"] == "source"
    assert {"from": "episodes", "to": "monthly"} in graph["edges"]


def test_openapi_docs_are_served(server):
    status, spec = get(server, "/openapi.json")
    assert status == 200
    for path in ("/v1/search", "/v1/records/{record_id}", "/v1/records/{record_id}/lineage",
                 "/v1/layers/{layer}", "/v1/timeline", "/v1/context", "/v1/brief"):
        assert path in spec["paths"], path
    status, _, body = request(server, "GET", "/docs")
    assert status == 200 and b"swagger" in body.lower()


def test_nothing_served_changes_the_memory_and_the_guard_is_on(server, served_project):
    before = hashlib.sha256(served_project.store.read_bytes()).hexdigest()
    assert request(server, "POST", "/v1/search?q=x", body=b"",
                   headers={"Origin": f"http://127.0.0.1:{server}"})[0] == 405
    assert request(server, "DELETE", "/v1/records/x",
                   headers={"X-Synix-Request": "1"})[0] == 405
    assert request(server, "POST", "/v1/search?q=x", body=b"")[0] == 403  # no same-origin proof
    assert request(server, "GET", "/v1/layers", headers={"Host": f"evil.example:{server}"})[0] == 403
    assert request(server, "GET", "/v1/layers", headers={"Origin": "http://evil.example"})[0] == 403
    for path in ("/v1/search?q=marathon", "/v1/brief?query=kayak", "/v1/layers/core", "/explore?q=kayak"):
        assert request(server, "GET", path)[0] == 200
    assert hashlib.sha256(served_project.store.read_bytes()).hexdigest() == before


def test_export_text_is_escaped_in_html(server):
    status, _, body = request(server, "GET", "/explore?q=kayak")
    page = body.decode()
    assert status == 200 and "Hostile kayak plan" in page
    assert "<script>window.pwned" not in page and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
    _, tr = get(server, "/v1/search?q=kayak&evidence=true")
    rid = tr["hits"][0]["artifact_id"]
    _, _, body = request(server, "GET", f"/records/{rid}")
    assert b"<img src=x" not in body and b"&lt;img src=x onerror=" in body
