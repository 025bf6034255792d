"""The synapse template end to end: `synix init --template synapse` + `synix run` build offline;
the brief's Tier 1 (identity, working memory, rolling summary, open loops, nudges) through a
real `synix serve` on 127.0.0.1 and the official `mcp` SDK's client; a forgotten session takes
its loops, facts and summary lines with it."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving

from synix_resources.live.inbox import Inbox
from synix_resources.live.requests import parse_ingest

OFFLINE = {**os.environ, "SYNIX_LLM_PROVIDER": "extractive"}
CHAT = ["Hi, my name is Dana Ortiz and I live in Lisbon.", "Nice to meet you, Dana.",
        "I need to renew my passport before the trip.", "Noted.",
        *[f"Small talk {i} about the weather in the garden." for i in range(1, 11)],
        "Remind me to water the tomatoes.", "Will do."]


def _synix(*args, env=OFFLINE, check=True):
    proc = subprocess.run(synix_cmd(*args), capture_output=True, text=True, env=env, timeout=600)
    assert not check or proc.returncode == 0, proc.stderr[-2000:]
    return proc


def _post(root, session: str, texts: list[str]) -> None:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": t, "ts": f"2025-06-01T10:{i:02d}:00Z"}
             for i, t in enumerate(texts)]
    inbox = Inbox(root / ".synix" / "live" / "inbox.db")
    try:
        inbox.ingest(parse_ingest(json.dumps({"metadata": {"session_id": session}, "turns": turns}).encode()))
    finally:
        inbox.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("synapse") / "mem"
    _synix("init", str(root), "--template", "synapse", "--demo")
    run = _synix("-p", str(root), "run")
    assert "extractive" in run.stdout and "core" in run.stdout
    _post(root, "chat", CHAT)
    return root


def _check_tier1(t1: dict) -> None:
    assert t1["session_id"] == "chat" and t1["window"] == 12
    assert [t["turn_id"] for t in t1["working_memory"]] == [f"chat-{i}" for i in range(5, 17)]
    assert t1["rolling_summary"]["folded_turn_ids"] == ["chat-1", "chat-2", "chat-3", "chat-4"]
    assert "[chat-3] user: I need to renew my passport before the trip." in t1["rolling_summary"]["text"]
    # the unbuilt session's facts (the inbox, by the rules) beside what the built loops layer read
    # in the demo exports' user turns
    assert {(f["key"], f["value"]) for f in t1["identity"]} == {
        ("name", "Dana Ortiz"), ("location", "Lisbon"), ("preference", "the plan-then-apply approach")}
    assert t1["from"] == "layers"
    chat = {("renew my passport before the trip", "open"), ("water the tomatoes", "open")}
    assert chat <= {(l["text"], l["status"]) for l in t1["active_loops"]}
    built = [l for l in t1["active_loops"] if (l["text"], l["status"]) not in chat]
    assert built and all(l["record_id"].startswith("loops-") for l in built)  # the demo's, as records
    # the turns are of 2025: every open loop is idle long enough to nudge
    assert {l["text"] for l in t1["nudge_candidates"]} == {l["text"] for l in t1["active_loops"]}
    assert t1["extractor"] == "rules (no model used)"


def test_synapse_template_builds_offline_and_brief_tier1_over_http(project, tmp_path):
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(synix_cmd("-p", str(project), "serve", "--port", str(port)),
                                stdout=log, stderr=subprocess.STDOUT, env=OFFLINE)
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        status, _, raw = request(port, "GET", "/v1/brief?budget_tokens=3000")
        then_status, _, then_raw = request(port, "GET", "/v1/brief?budget_tokens=3000&session=chat"
                                           "&as_of=2025-06-01T10:03:00Z")
        bad_status, _, bad_raw = request(port, "GET", "/v1/brief?as_of=last%20tuesday")
    finally:
        stop(proc)
    assert status == 200, raw
    brief = json.loads(raw)
    _check_tier1(brief["tier1"])
    assert brief["text"].startswith("## Identity\n") and "\n- name: Dana Ortiz\n" in brief["text"].split("## Rolling")[0]
    print(brief["tier1"]["text"])
    assert then_status == 200, then_raw
    then = json.loads(then_raw)["tier1"]  # what had been said by 10:03: the first four turns
    assert then["as_of"] == "2025-06-01T10:03:00Z" and len(then["working_memory"]) == 4
    assert ("renew my passport before the trip", "open") in {(l["text"], l["status"]) for l in then["active_loops"]}
    assert "water the tomatoes" not in {l["text"] for l in then["active_loops"]}
    assert bad_status == 400 and b"as_of" in bad_raw and b"Traceback" not in bad_raw


def test_brief_tier1_over_mcp(project):
    from mcp import Client

    from synix_assets.app.memory import MemoryService
    from synix_assets.project import ProjectPaths
    from synix_assets.serve.mcp_server import build_server

    async def session(server):
        async with Client(server) as client:
            result = await client.call_tool("get_brief", {"budget_tokens": 3000})
            then = await client.call_tool("get_brief", {"session": "chat", "as_of": "2025-06-01T10:03:00Z"})
            return [json.loads("".join(getattr(c, "text", "") for c in r.content)) for r in (result, then)]

    service = MemoryService(ProjectPaths(project))
    try:
        brief, then = asyncio.run(session(build_server(service)))
    finally:
        service.close()
    _check_tier1(brief["tier1"])
    assert then["tier1"]["as_of"] == "2025-06-01T10:03:00Z" and len(then["tier1"]["working_memory"]) == 4
    assert "water the tomatoes" not in {l["text"] for l in then["tier1"]["active_loops"]}


def test_forgetting_a_session_takes_its_loops_facts_and_summary(project):
    from synix_assets.app.synapse import brief_tier1
    from synix_assets.project import ProjectPaths

    _post(project, "secret", ["Call me Zed. I will buy a sailing boat.", "Sure."])
    inbox = Inbox(project / ".synix" / "live" / "inbox.db")
    try:
        inbox.close_session("secret")
    finally:
        inbox.close()
    _synix("live", "drain", "-p", str(project))
    before = brief_tier1(ProjectPaths(project), "secret")
    assert ("name", "Zed") in {(f["key"], f["value"]) for f in before["identity"]}
    assert "buy a sailing boat" in {l["text"] for l in before["active_loops"]}
    _synix("-p", str(project), "forget", "secret")
    after = brief_tier1(ProjectPaths(project), "secret")
    assert after["session_id"] is None and after["working_memory"] == []
    assert "Zed" not in json.dumps(after) and "sailing" not in json.dumps(after)
    # the other session's loops and facts stay
    assert ("name", "Dana Ortiz") in {(f["key"], f["value"]) for f in after["identity"]}


def test_branch_create_template_synapse_starts_the_branch_from_the_template(tmp_path):
    root = tmp_path / "mem"
    _synix("init", str(root), "--template", "monthly", "--demo")
    _synix("-p", str(root), "branch", "create", "syn", "--template", "synapse")
    branch_pipeline = root / ".synix" / "branches" / "syn" / "pipeline.py"
    assert 'kind="live", window=12' in branch_pipeline.read_text()
    both = _synix("-p", str(root), "branch", "create", "x", "--template", "synapse", "--pipeline",
                  str(branch_pipeline), check=False)
    assert both.returncode != 0 and "not both" in both.stderr
