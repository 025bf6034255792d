"""A brief "as of" an instant holds only what was built from sources all dated up to then —
through a real `synix serve` on 127.0.0.1, the `synix memory get_brief` CLI process and the
official `mcp` client: not the core folded from every later month (the fold's checkpoint of then
instead), not the rollup of a month that runs past then, not a conversation that went on after
it, and no search hit on any of those."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
from urllib.parse import quote

import pytest
from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving

from tests.conftest import _conversation, _make_claude_export

OFFLINE = {**os.environ, "SYNIX_LLM_PROVIDER": "extractive"}
AS_OF = "2023-05-01"
T = "2023-05-01T00:00:00Z"
ANIMALS = ["alpaca", "beluga", "cormorant", "dingo", "eland", "fennec", "gecko", "heron"]  # months 1–8


def _synix(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(synix_cmd(*args), capture_output=True, text=True, env=OFFLINE, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Eight months of conversations, one a month, plus one begun on 28 April that went on to
    3 May; the core folds the monthly rollups with a checkpoint every two months."""
    base = tmp_path_factory.mktemp("as_of")
    convs = [_conversation(f"c{m}", f"{animal.title()} notes", f"2023-{m:02d}-10", f"{animal} husbandry")
             for m, animal in enumerate(ANIMALS, start=1)]
    convs.append({"uuid": "span", "name": "Quokka trip", "created_at": "2023-04-28T10:00:00Z", "messages": [
        ("human", "Planning a quokka trip to Rottnest island.", "2023-04-28T10:00:00Z"),
        ("assistant", "The quokka colony is near the ferry.", "2023-04-28T10:01:00Z"),
        ("human", "Back from the quokka trip, it was sunny.", "2023-05-03T09:00:00Z"),
        ("assistant", "Glad the quokka trip went well.", "2023-05-03T09:01:00Z")]})
    export = _make_claude_export(base / "claude.json", convs)
    root = base / "mem"
    _synix("init", str(root), "--from", str(export))
    pipeline = root / "pipeline.py"
    text = pipeline.read_text()
    assert "checkpoint_every=6" in text
    pipeline.write_text(text.replace("checkpoint_every=6", "checkpoint_every=2"))
    _synix("-p", str(root), "run")
    return root


def _sources_until(root, artifact_ids: list[str]) -> list[str]:
    """The last-message date of every conversation the records were built from."""
    from synix_resources.store.artifact_store import ArtifactStore

    store = ArtifactStore(root / ".synix" / "synix.db", read_only=True)
    try:
        return [leaf.metadata["meta.time.updated_at"] for aid in artifact_ids for leaf in store.leaves(aid)]
    finally:
        store.close()


def _group_keys(root, artifact_ids: list[str]) -> list[str]:
    from synix_resources.store.artifact_store import ArtifactStore

    store = ArtifactStore(root / ".synix" / "synix.db", read_only=True)
    try:
        return [a.group_key for a in store.get_many(artifact_ids)]
    finally:
        store.close()


def _check_as_of(root, brief: dict) -> None:
    assert brief["as_of"] == T
    [core] = [s for s in brief["sections"] if s["kind"] == "core"]
    # the core now folds all eight months: as of May its state after Jan and Feb (the checkpoint
    # after Mar–Apr took in April's rollup, which holds the quokka talk of 3 May)
    assert core["artifact_id"] is None and core["checkpoint"] == {"position": 2, "of": 8}
    assert _group_keys(root, core["sources"]) == ["2023-01", "2023-02"]
    assert f"## core as of {T} (its state after 2 of 8 inputs) [{', '.join(core['sources'])}]" in brief["text"]
    cited = [s["artifact_id"] for s in brief["sections"] if s["artifact_id"]] + core["sources"]
    dates = _sources_until(root, cited)
    assert dates and all(d <= T for d in dates), dates
    recent = {s["layer"]: [] for s in brief["sections"] if s["kind"] == "recent"}
    for s in brief["sections"]:
        if s["kind"] == "recent":
            recent[s["layer"]].append(s["artifact_id"])
    assert _group_keys(root, recent["monthly"]) == ["2023-03", "2023-02", "2023-01"]
    # April's rollup (it holds the quokka talk of 3 May) was the hit on "dingo": as of May the
    # search goes again without it, and April's dingo episode below it is the hit
    hits = [s for s in brief["sections"] if s["kind"] == "hit"]
    assert [h["layer"] for h in hits] == ["episodes"]
    assert _group_keys(root, [h["artifact_id"] for h in hits]) == ["c4"]
    text = brief["text"].lower()
    assert "dingo" in text and "quokka" not in text
    assert not any(animal in text for animal in ANIMALS[4:])


def test_a_brief_without_as_of_starts_with_the_core_built_from_every_month(project):
    brief = json.loads(_synix("-p", str(project), "memory", "get_brief", "dingo", "--json").stdout)
    [core] = [s for s in brief["sections"] if s["kind"] == "core"]
    assert core["artifact_id"].startswith("core-") and "checkpoint" not in core
    assert max(_sources_until(project, [core["artifact_id"]])) == "2023-08-10T10:03:00Z"


def test_brief_as_of_over_http_holds_only_what_was_built_from_sources_up_to_then(project, tmp_path):
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(synix_cmd("-p", str(project), "serve", "--port", str(port)),
                                stdout=log, stderr=subprocess.STDOUT, env=OFFLINE)
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        status, _, raw = request(port, "GET", f"/v1/brief?query=dingo&as_of={quote(AS_OF)}")
    finally:
        stop(proc)
    assert status == 200, raw
    _check_as_of(project, json.loads(raw))


def test_brief_as_of_from_the_cli(project):
    out = _synix("-p", str(project), "memory", "get_brief", "dingo", "--as-of", AS_OF, "--json").stdout
    _check_as_of(project, json.loads(out))


def test_brief_as_of_over_mcp(project):
    from mcp import Client

    from synix_assets.app.memory import MemoryService
    from synix_assets.project import ProjectPaths
    from synix_assets.serve.mcp_server import build_server

    async def session(server):
        async with Client(server) as client:
            result = await client.call_tool("get_brief", {"query": "dingo", "as_of": AS_OF})
            return json.loads("".join(getattr(c, "text", "") for c in result.content))

    service = MemoryService(ProjectPaths(project))
    try:
        brief = asyncio.run(session(build_server(service)))
    finally:
        service.close()
    _check_as_of(project, brief)


def test_an_as_of_brief_has_no_hit_on_a_record_that_took_in_later_sources(project):
    # every record holding the quokka talk (its episode, April's rollup, the core) reaches 3 May
    now = json.loads(_synix("-p", str(project), "memory", "get_brief", "quokka", "--json").stdout)
    assert [s for s in now["sections"] if s["kind"] == "hit"]
    then = json.loads(_synix("-p", str(project), "memory", "get_brief", "quokka", "--as-of", AS_OF,
                             "--json").stdout)
    assert [s for s in then["sections"] if s["kind"] == "hit"] == [] and "quokka" not in then["text"].lower()


def test_before_the_first_checkpoint_an_as_of_brief_has_no_core(project):
    # by 1 February only January is folded: the first checkpoint (after February) is later
    brief = json.loads(_synix("-p", str(project), "memory", "get_brief", "--as-of", "2023-02-01", "--json").stdout)
    assert [s for s in brief["sections"] if s["kind"] == "core"] == []
    monthly = [s["artifact_id"] for s in brief["sections"] if s.get("layer") == "monthly"]
    assert _group_keys(project, monthly) == ["2023-01"]


def test_a_record_is_built_by_an_instant_only_when_its_latest_source_is_dated_by_then():
    from synix_assets.engine.periods import built_by, sources_until

    episode = {"meta.time.created_at": "2023-04-28T10:00:00Z", "meta.time.updated_at": "2023-05-03T09:01:00Z"}
    rollup = {"meta.time.created_at": "2023-04-10T10:00:00+02:00", "meta.time.last_at": "2023-04-10T10:03:00Z"}
    assert sources_until(episode) == "2023-05-03T09:01:00Z" and not built_by(episode, T)
    assert sources_until(rollup) == "2023-04-10T10:03:00Z" and built_by(rollup, T)
    assert not built_by({}, T)  # undated: not known to be built by then
