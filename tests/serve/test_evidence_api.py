"""The evidence ledger over HTTP on a real `synix serve` process: append (idempotent, stable
ids), search, timeline, resolve, and a bad event refused with one line and a 400."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths

    base = tmp_path_factory.mktemp("evidence_serve")
    os.environ["SYNIX_LLM_PROVIDER"] = "fake"
    paths = ProjectPaths(init_project(base / "mem", exports=demo_exports()))
    run_build(paths)
    port, log_path = free_port(), base / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(synix_cmd("-p", str(paths.root), "serve", "--port", str(port), "--writes"),
                                stdout=log, stderr=subprocess.STDOUT, env={**os.environ})
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        yield port
    finally:
        stop(proc)


def _call(port, method, path, body=None):
    status, _, raw = request(port, method, path, body=None if body is None else json.dumps(body).encode(),
                             headers={"Content-Type": "application/json", "X-Synix-Request": "1"}
                             if body is not None else None)
    return status, json.loads(raw)


def test_events_are_appended_searched_and_resolved_over_http(server):
    commit = {"source": "github", "event_type": "commit", "content": "Moved the sourdough timer to a cron job",
              "timestamp": "2025-06-02T09:00:00+02:00", "external_id": "9f1c2e"}
    status, first = _call(server, "POST", "/v1/events", {"events": [commit]})
    assert status == 200 and first["appended"] == 1
    status, again = _call(server, "POST", "/v1/events", {"events": [commit]})
    assert again == {**first, "appended": 0, "existing": 1}  # the same id, not a second event
    status, found = _call(server, "GET", "/v1/events/search?q=sourdough+timer&source=github")
    assert status == 200 and [e["id"] for e in found["events"]] == first["ids"]
    assert found["events"][0]["timestamp"] == "2025-06-02T07:00:00Z"
    status, found = _call(server, "GET", "/v1/events/search?q=equity")  # the exports' messages
    assert found["events"] and {e["source"] for e in found["events"]} <= {"chatgpt", "claude"}
    status, window = _call(server, "GET", "/v1/events/timeline?since=2025-06-02&source=github")
    assert [e["external_id"] for e in window["events"]] == ["9f1c2e"]
    status, got = _call(server, "POST", "/v1/events/resolve", {"ids": [*first["ids"], "ev-000000000000000000000000"]})
    assert [e["id"] for e in got["found"]] == first["ids"] and got["missing"] == ["ev-000000000000000000000000"]


@pytest.mark.parametrize("body, words", [
    ({"events": [{"source": "github", "event_type": "commit"}]}, "'content' is missing"),
    ({"events": [{"source": "s", "event_type": "t", "content": "c", "timestamp": "soon"}]}, "event timestamp"),
    ({"events": []}, "no events to append")])
def test_a_bad_event_is_a_400_with_one_line(server, body, words):
    status, answer = _call(server, "POST", "/v1/events", body)
    assert status == 400 and words in answer["error"] and "\n" not in answer["error"], answer
