"""The agent step (issue 32, Syke's synthesis loop as a layer): tool calls driven by the
deterministic fake model (create, supersede, link, map rewrite) land in the memory-ops log with
provenance; incremental loops; a prompt change rebuilds; forget takes what a conversation
derived; the syke template offline; lifecycle (dormant) under as_of."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
from agent_memory_helpers import fake_model_env  # noqa: E402

PIPELINE = '''
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts
{extra}
pipeline = Pipeline("syke-test", agent="me")
pipeline.source("exports", path="exports", format="auto")
pipeline.merge("transcripts", from_=["exports"])
pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
pipeline.agent_step("memories", from_="episodes", prompt={prompt}, batch_size=100, max_turns=5)
pipeline.search_index("memory-index", from_=["episodes", "memories"])
'''
CUSTOM = '''
def my_synthesis(memory_map, records):
    return "Keep only what lasts.\\n" + prompts.syke_synthesis(memory_map, records)
'''


def _project(base: Path, prompt: str = "prompts.syke_synthesis", extra: str = ""):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.project import ProjectPaths

    root = init_project(base / "mem", exports=demo_exports()[:1])
    (root / "pipeline.py").write_text(PIPELINE.format(prompt=prompt, extra=extra))
    return ProjectPaths(root)


def _ops(paths) -> list[dict]:
    from synix_resources.agent_memory.log import MemoryLog

    log = MemoryLog(paths.memory_log)
    try:
        return log.ops()
    finally:
        log.close()


def _layer(paths, layer: str) -> dict:
    store = paths.open_store(read_only=True)
    try:
        return {a.group_key: a for a in store.list_layer(layer)}
    finally:
        store.close()


def _run(paths):
    from synix_assets.app.run import run_build

    with fake_model_env(paths.root):
        return run_build(paths)


def _calls(report, layer="memories") -> int:
    return report.layers.get(layer, {}).get("llm_calls", 0)  # a no-op build reports no layer


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    paths = _project(tmp_path_factory.mktemp("agent_step"))
    first = _run(paths)
    return paths, first


def test_the_fake_models_tool_calls_create_memories_link_them_and_rewrite_the_map(built):
    paths, first = built
    episodes = _layer(paths, "episodes")
    ops = _ops(paths)
    creates = [o for o in ops if o["op"] == "create"]
    links = [o for o in ops if o["op"] == "link"]
    assert len(creates) == len(episodes) and len(links) == len(creates) - 1
    episode_ids = {a.artifact_id for a in episodes.values()}
    for op in ops:  # every write is the step's, from one loop, citing the evidence it read
        assert op["by"] == "agent:memories" and op["loop"].startswith("loop-")
        if op["op"] == "create":
            assert len(op["evidence"]) == 1 and op["evidence"][0] in episode_ids
    memories = _layer(paths, "agent_memories")
    assert all(set(m.parent_ids) <= episode_ids and m.parent_ids for m in memories.values())
    layer = _layer(paths, "memories")
    the_map = layer["__map__"]
    assert the_map.content.startswith(f"# Map ({len(creates)} memories)")
    assert all(mid in the_map.content for mid in memories)
    assert the_map.metadata["meta.custom.map_written"] is True
    assert set(layer) == set(episodes) | {"__map__"}  # one record per piece of evidence read
    assert _calls(first) == 3  # one loop: evolve, link + map, done

    from synix_assets.app.memory import MemoryService

    svc = MemoryService(paths)
    try:
        got = svc.memory_map()
    finally:
        svc.close()
    assert got["map"]["content"] == the_map.content and got["map"]["record_id"] == the_map.artifact_id


def test_a_second_run_without_new_evidence_calls_nothing_and_a_new_export_makes_one_loop(built):
    from synix_assets.app.init import demo_exports

    paths, _ = built
    again = _run(paths)
    assert _calls(again) == 0 and len(_ops(paths)) == len(_ops(paths))
    before = _ops(paths)
    shutil.copy(demo_exports()[1], paths.root / "exports")
    third = _run(paths)
    after = _ops(paths)
    new = after[len(before):]
    assert _calls(third) == 3 and len({o["loop"] for o in new}) == 1
    assert new[0]["loop"] not in {o["loop"] for o in before}
    # the fake supersedes a held memory sharing half of a new fact's words: the fact changed
    supersedes = [o for o in new if o["op"] == "supersede"]
    assert supersedes
    memories = _layer(paths, "agent_memories")
    for op in supersedes:
        old, replacement = memories[op["memory_id"]], memories[op["new_id"]]
        assert old.metadata["state"] == "superseded" and old.metadata["superseded_by"] == op["new_id"]
        assert old.artifact_id in replacement.parent_ids
    assert "__map__" in _layer(paths, "memories")


def test_changing_the_prompt_takes_back_the_steps_writes_and_reads_everything_again(tmp_path):
    paths = _project(tmp_path)
    _run(paths)
    old = {o["op_id"] for o in _ops(paths)}
    (paths.root / "pipeline.py").write_text(PIPELINE.format(prompt="my_synthesis", extra=CUSTOM))
    report = _run(paths)
    ops = _ops(paths)
    assert _calls(report) == 3 and ops and not old & {o["op_id"] for o in ops}
    assert len([o for o in ops if o["op"] == "create"]) == len(_layer(paths, "episodes"))
    held = {k for k, a in _layer(paths, "agent_memories").items()}
    assert held == {o["memory_id"] for o in ops if o["op"] == "create"}


def test_forgetting_a_conversation_removes_the_memories_derived_from_it_and_rewrites_the_map(tmp_path):
    from synix_assets.app.forget import forget

    paths = _project(tmp_path)
    _run(paths)
    episodes = _layer(paths, "episodes")
    doomed = sorted(episodes)[0]
    doomed_id = episodes[doomed].artifact_id
    cited = [o["memory_id"] for o in _ops(paths) if o["op"] == "create" and doomed_id in o["evidence"]]
    assert cited
    with fake_model_env(paths.root):
        forget(paths, episodes[doomed].metadata["meta.chat.conversation_id"])
    ops = _ops(paths)
    assert not any(doomed_id in str(o) for o in ops)
    assert not set(cited) & set(_layer(paths, "agent_memories"))
    layer = _layer(paths, "memories")
    assert doomed not in layer
    report = _run(paths)  # the map was built on a forgotten memory: it is rewritten
    the_map = _layer(paths, "memories")["__map__"]
    assert not any(mid in the_map.content for mid in cited)
    assert _calls(report) <= 3


def test_the_syke_template_builds_offline_and_says_what_it_could_not_do(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from synix_assets.cli.main import main

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    root = tmp_path / "syke"
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(root), "--template", "syke", "--demo"]).exit_code == 0
    plan = runner.invoke(main, ["plan", "-p", str(root)], env={"COLUMNS": "300"})
    assert plan.exit_code == 0 and "offline: no model" in plan.output
    run = runner.invoke(main, ["run", "-p", str(root)])
    assert run.exit_code == 0, run.output
    from synix_assets.project import ProjectPaths

    paths = ProjectPaths(root)
    memories = _layer(paths, "agent_memories")
    the_map = _layer(paths, "memories")["__map__"]
    assert memories and the_map.content.startswith(f"# Map ({len(memories)} memories, offline")
    assert "offline: no model" in the_map.metadata["meta.custom.offline"]
    found = runner.invoke(main, ["search", "marathon", "-p", str(root), "--json"])
    assert found.exit_code == 0 and "agent_memories" in found.output
    again = runner.invoke(main, ["run", "-p", str(root)])
    assert again.exit_code == 0 and len(_ops(paths)) == len(memories)


def test_a_memory_not_reinforced_for_thirty_days_is_dormant_as_of_then_and_soft_before(tmp_path):
    from synix_resources.agent_memory.replay import lifecycle_at, replay

    state = replay([
        {"op": "create", "op_id": "1", "recorded_at": "2024-01-01T00:00:00Z", "memory_id": "mem-a",
         "content": "Alex runs", "evidence": ["e1"], "valid_from": "2024-01-01T00:00:00Z"},
        {"op": "create", "op_id": "2", "recorded_at": "2024-01-02T00:00:00Z", "memory_id": "mem-b",
         "content": "Alex swims", "evidence": ["e2"], "valid_from": "2024-01-02T00:00:00Z"},
        {"op": "link", "op_id": "3", "recorded_at": "2024-03-01T00:00:00Z", "link_id": "link-1",
         "source_id": "mem-a", "target_id": "mem-b", "reason": "sports", "valid_from": "2024-03-01T00:00:00Z"},
    ])
    a = state.memories["mem-a"].reinforced
    assert lifecycle_at(a, "2024-01-10T00:00:00Z") == "soft"
    assert lifecycle_at(a, "2024-02-15T00:00:00Z") == "dormant"  # 45 days without reinforcement
    assert lifecycle_at(a, "2024-03-02T00:00:00Z") == "active"  # the link woke and reinforced it
    assert state.memories["mem-a"].lifecycle == "active"


def test_the_memory_view_shows_the_lifecycle_as_of_the_time_asked(tmp_path):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.app.memory import MemoryService
    from synix_assets.engine.agent_memory import MemoryWriter
    from synix_assets.project import ProjectPaths

    paths = ProjectPaths(init_project(tmp_path / "m", exports=demo_exports()[:1]))
    _run(paths)
    writer = MemoryWriter(paths)
    made = writer.create_memory("Alex lives in Berlin", valid_from="2024-01-10")
    writer.update_memory(made["memory_id"], "Alex lives in Berlin-Kreuzberg", valid_from="2024-01-20")
    svc = MemoryService(paths)
    try:
        early = svc.record(made["memory_id"], as_of="2024-01-15")
        later = svc.record(made["memory_id"], as_of="2024-01-25")
        quiet = svc.record(made["memory_id"], as_of="2024-06-01")
        today = svc.record(made["memory_id"])
    finally:
        svc.close()
    assert (early["lifecycle"], later["lifecycle"]) == ("soft", "soft")
    assert early["content"] == "Alex lives in Berlin"
    assert quiet["lifecycle"] == "dormant" and today["lifecycle"] == "dormant"
