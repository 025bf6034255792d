"""The Synapse architecture as build layers (issue 32): the rolling summary (`window_fold`), open
loops and identity facts are records of the build — created, reinforced and completed loops with
their evidence turns, each evicted turn folded once across a session's versions, forget taking
every loop, fact and summary a conversation gave, a prompt change rebuilding, a second run
reusing, the model path (the fake model's JSON answer) beside the rules, Tier 1 and `as_of` from
the built layers."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
from agent_memory_helpers import fake_model_env  # noqa: E402
from live_helpers import post  # noqa: E402

S1 = ["Hi, my name is Dana Ortiz and I live in Berlin.", "Nice to meet you, Dana.",
      "I need to file the tax return before Friday.", "Noted.",
      "Remind me to call the dentist about the crown.", "Will do.",
      *[f"Small talk {i} about the garden." for i in range(1, 11)]]          # 16 turns
S2 = ["Ugh, I still need to file that tax return.", "You can do it.",
      "Finally done: called the dentist, crown is booked.", "Great.",
      "Big news: I moved to Lisbon last week.", "Congratulations!"]
CUSTOM = '''

def my_loops(turns):
    return "Be strict about what counts as a commitment.\\n" + prompts.open_loops(turns)
'''


def _project(base: Path):
    from synix_assets.app.init import init_project
    from synix_assets.project import ProjectPaths

    return ProjectPaths(init_project(base / "mem", template="synapse"))


def _hand(paths, *sessions: tuple[str, list[str], str]) -> None:
    """Post each (session, texts, day), close it and hand it to the build (the outbox claim)."""
    from synix_resources.live.inbox import Inbox

    inbox = Inbox(paths.root / ".synix" / "live" / "inbox.db")
    try:
        for session, texts, day in sessions:
            post(inbox, session, *texts, day=day)
            inbox.close_session(session)
        inbox.claim()
    finally:
        inbox.close()


def _built(paths) -> None:
    from synix_resources.live.inbox import Inbox

    inbox = Inbox(paths.root / ".synix" / "live" / "inbox.db")
    try:
        batch, _, _ = inbox.building()
        inbox.finish(batch, ok=True)
    finally:
        inbox.close()


def _run(paths, provider: str):
    from synix_assets.app.run import run_build

    with fake_model_env(paths.root):
        import os
        os.environ["SYNIX_LLM_PROVIDER"] = provider
        report = run_build(paths)
    _built(paths)
    return report


def _layer(paths, layer: str) -> dict:
    store = paths.open_store(read_only=True)
    try:
        return {a.group_key: a for a in store.list_layer(layer)}
    finally:
        store.close()


def _loops(paths) -> dict:
    return {a.metadata["meta.custom.text"]: a for k, a in _layer(paths, "loops").items() if k.startswith("~loop-")}


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    paths = _project(tmp_path_factory.mktemp("synapse_layers"))
    _hand(paths, ("s1", S1, "2025-03-01"), ("s2", S2, "2025-03-04"))
    report = _run(paths, "extractive")
    return paths, report


def test_loops_created_reinforced_and_completed_are_build_records_citing_their_turns(offline):
    paths, report = offline
    loops = _loops(paths)
    tax, dentist = loops["file the tax return before Friday"], loops["call the dentist about the crown"]
    assert tax.metadata["meta.custom.status"] == "reinforced" and tax.metadata["meta.custom.evidence"] == ["s1-3", "s2-1"]
    assert dentist.metadata["meta.custom.status"] == "completed"
    assert dentist.metadata["meta.custom.evidence"] == ["s1-5", "s2-3"]
    assert dentist.metadata["meta.custom.completed_at"] == "2025-03-04T10:02:00Z"
    readings = _layer(paths, "loops")
    transcripts = _layer(paths, "transcripts")
    assert set(tax.parent_ids) == {readings["s1"].artifact_id, readings["s2"].artifact_id}
    assert list(readings["s1"].parent_ids) == [transcripts["s1"].artifact_id]  # lineage down to the turns
    assert tax.metadata["meta.custom.extractor"] == "rules (no model used)"
    assert readings["~open"].content == "- [reinforced] file the tax return before Friday"
    identity = _layer(paths, "identity")
    assert identity["~location"].content == "location: Lisbon"
    assert identity["~location"].metadata["meta.custom.replaces"]["value"] == "Berlin"
    assert list(identity["~location"].parent_ids) == [readings["s2"].artifact_id]
    assert report.layers["loops"]["llm_calls"] == 0 and report.layers["rolling"]["llm_calls"] == 0


def test_the_rolling_summary_folds_the_turns_older_than_the_window_and_keeps_the_last_twelve(offline):
    paths, _ = offline
    rolling = _layer(paths, "rolling")
    s1 = rolling["s1"].metadata
    assert s1["meta.custom.folded_turn_ids"] == ["s1-1", "s1-2", "s1-3", "s1-4"]
    assert s1["meta.custom.window_turn_ids"] == [f"s1-{i}" for i in range(5, 17)]
    assert "[s1-3] user: I need to file the tax return before Friday." in rolling["s1"].content
    assert list(rolling["s1"].parent_ids) == [_layer(paths, "transcripts")["s1"].artifact_id]
    assert rolling["s2"].metadata["meta.custom.folded_turn_ids"] == []


def test_a_second_run_reuses_every_synapse_record(offline):
    paths, _ = offline
    before = {l: {k: a.artifact_id for k, a in _layer(paths, l).items()} for l in ("rolling", "loops", "identity")}
    again = _run(paths, "extractive")
    for layer in ("rolling", "loops", "identity"):
        assert again.layers.get(layer, {}).get("built", 0) == 0
        assert {k: a.artifact_id for k, a in _layer(paths, layer).items()} == before[layer]


def test_a_grown_session_folds_only_the_turns_evicted_since_each_exactly_once(tmp_path):
    paths = _project(tmp_path)
    _hand(paths, ("s", [f"We planted tomatoes in bed number {i} of the garden this spring." for i in range(1, 15)], "2025-05-01"))
    _run(paths, "extractive")
    first = _layer(paths, "rolling")["s"]
    assert first.metadata["meta.custom.folded_turn_ids"] == ["s-1", "s-2"]
    _hand(paths, ("s", ["The basil in bed two needs more sun this week.", "Move it next to the fence then.",
                                  "The peppers are finally flowering in the greenhouse."], "2025-05-02"))
    _run(paths, "extractive")
    second = _layer(paths, "rolling")["s"]
    assert second.metadata["meta.custom.newly_folded"] == ["s-3", "s-4", "s-5"]
    assert second.metadata["meta.custom.folded_turn_ids"] == [f"s-{i}" for i in range(1, 6)]
    assert second.metadata["meta.custom.folds"] == 2
    lines = second.content.splitlines()
    assert [l.split("]")[0] for l in lines] == [f"[s-{i}" for i in range(1, 6)]  # none twice


def test_forgetting_a_conversation_removes_every_loop_fact_and_summary_derived_from_it(tmp_path):
    from synix_assets.app.forget import forget

    paths = _project(tmp_path)
    _hand(paths, ("s1", S1, "2025-03-01"), ("s2", S2, "2025-03-04"))
    _run(paths, "extractive")
    s2_reading = _layer(paths, "loops")["s2"].artifact_id
    with fake_model_env(paths.root):
        import os
        os.environ["SYNIX_LLM_PROVIDER"] = "extractive"
        forget(paths, "s2")
    loops = _layer(paths, "loops")
    assert "s2" not in loops and "s2" not in _layer(paths, "rolling")
    assert not any(s2_reading in a.parent_ids for a in loops.values())
    for a in [*loops.values(), *_layer(paths, "identity").values()]:
        assert "s2-" not in json.dumps(a.metadata) and "s2-" not in a.content
    replayed = _loops(paths)  # the rest replayed: the tax loop as s1 alone left it
    assert replayed["file the tax return before Friday"].metadata["meta.custom.status"] == "open"
    assert replayed["call the dentist about the crown"].metadata["meta.custom.status"] == "open"
    assert _layer(paths, "identity")["~location"].content == "location: Berlin"


def test_the_model_path_reads_each_conversation_once_and_a_prompt_change_reads_them_again(tmp_path):
    paths = _project(tmp_path)
    _hand(paths, ("s1", S1, "2025-03-01"), ("s2", S2, "2025-03-04"))
    first = _run(paths, "fake")
    assert first.layers["loops"]["llm_calls"] == 2  # one JSON call per conversation
    assert first.layers["rolling"]["llm_calls"] == 1  # s1 has turns past the window, s2 none
    loops = _loops(paths)
    tax = loops["file the tax return before Friday"]
    assert tax.metadata["meta.custom.status"] == "reinforced"
    assert tax.metadata["meta.custom.extractor"].startswith("model ")
    assert _layer(paths, "identity")["~name"].content == "name: Dana Ortiz"
    assert _run(paths, "fake").layers.get("loops", {}).get("llm_calls", 0) == 0
    old = {k: a.artifact_id for k, a in _layer(paths, "loops").items() if not k.startswith("~")}
    pipeline = paths.pipeline_file.read_text()
    paths.pipeline_file.write_text(pipeline.replace("prompt=prompts.open_loops", "prompt=my_loops")
                                   .replace('pipeline = Pipeline(', CUSTOM + '\npipeline = Pipeline(', 1))
    third = _run(paths, "fake")
    assert third.layers["loops"]["llm_calls"] == 2 and third.layers.get("rolling", {}).get("built", 0) == 0
    new = {k: a.artifact_id for k, a in _layer(paths, "loops").items() if not k.startswith("~")}
    assert set(new) == set(old) and not set(new.values()) & set(old.values())


def test_an_answer_that_is_not_the_json_asked_for_falls_back_to_the_rules_and_says_so():
    from synix_assets.engine.procedural import model_events
    from synix_assets.engine.readings import NOT_JSON

    user = [{"turn_id": "t-1", "ts": "2025-01-01T10:00:00Z", "session_id": "t", "content": "I will call Mo."}]
    assert model_events("Sure! Here are the loops: call Mo", user, "model m") is None
    assert model_events('{"turns": [{"turn_id": "t-9", "mentions": []}]}', user, "model m") is None
    good = model_events('{"turns": [{"turn_id": "t-1", "mentions": [{"kind": "commitment", "text": "call Mo"}]}]}',
                        user, "model m")
    assert good[0]["mentions"] == [("commitment", "call Mo")] and good[0]["extractor"] == "model m"
    assert "rules" in NOT_JSON


def test_tier1_is_read_from_the_built_layers_and_as_of_shows_it_as_it_stood(offline):
    from synix_assets.app.memory import MemoryService

    paths, _ = offline
    svc = MemoryService(paths)
    try:
        now = svc.brief(session="s1")
        then = svc.brief(session="s1", as_of="2025-03-02")
        unnamed = svc.brief(as_of="2025-03-02")["tier1"]
    finally:
        svc.close()
    t1 = now["tier1"]
    assert t1["from"] == "layers" and t1["rolling_summary"]["from"] == "layer"
    assert t1["rolling_summary"]["record_id"] == _layer(paths, "rolling")["s1"].artifact_id
    assert [t["turn_id"] for t in t1["working_memory"]] == [f"s1-{i}" for i in range(5, 17)]
    loops = {l["text"]: l for l in t1["loops"]}
    assert loops["file the tax return before Friday"]["record_id"] == \
        _loops(paths)["file the tax return before Friday"].artifact_id
    assert {l["text"] for l in t1["active_loops"]} == {"file the tax return before Friday"}
    assert {(f["key"], f["value"]) for f in t1["identity"]} == {("name", "Dana Ortiz"), ("location", "Lisbon")}
    old = then["tier1"]
    assert then["as_of"] == old["as_of"] == "2025-03-02T00:00:00Z"
    assert {(l["text"], l["status"]) for l in old["active_loops"]} == {
        ("file the tax return before Friday", "open"), ("call the dentist about the crown", "open")}
    assert {(f["key"], f["value"]) for f in old["identity"]} == {("name", "Dana Ortiz"), ("location", "Berlin")}
    assert [n["idle_days"] for n in old["nudge_candidates"]] == []  # a day old then: nothing to nudge
    assert unnamed["session_id"] == "s1"  # the session active by then, not today's latest
    assert unnamed["working_memory"] == old["working_memory"]



def test_a_brief_with_tier1_keeps_within_its_token_budget_tier1_taking_at_most_half(offline):
    from synix_assets.app.memory import MemoryService
    from synix_resources.llm.mapreduce import estimate_tokens

    paths, _ = offline
    svc = MemoryService(paths)
    try:
        roomy, tight = svc.brief(session="s1", budget_tokens=20_000), svc.brief(session="s1", budget_tokens=300)
    finally:
        svc.close()
    whole = roomy["tier1"]["text"]
    assert estimate_tokens(whole) > 150 and not roomy["tier1"].get("truncated")  # so the tight one must cut it
    assert estimate_tokens(tight["tier1"]["text"]) <= 150 and tight["tier1"]["truncated"]
    assert whole.startswith(tight["tier1"]["text"][:-1])  # cut at the end, not rewritten
    assert tight["tokens"] <= 300 and estimate_tokens(tight["text"]) <= 300 + 8 * len(tight["sections"])
    assert roomy["tokens"] >= estimate_tokens(whole)  # Tier 1 is counted in the brief's tokens

def test_get_brief_as_of_is_the_same_from_python_and_the_cli(offline):
    from click.testing import CliRunner

    import synix
    from synix_assets.cli.main import main

    paths, _ = offline
    py = synix.open(paths.root).get_brief(as_of="2025-03-02", session="s1")
    cli = CliRunner().invoke(main, ["memory", "get_brief", "--as-of", "2025-03-02", "--session", "s1",
                                    "--json", "-p", str(paths.root)])
    assert cli.exit_code == 0, cli.output
    answer = json.loads(cli.output)
    assert answer["tier1"]["as_of"] == "2025-03-02T00:00:00Z"
    assert {l["status"] for l in answer["tier1"]["active_loops"]} == {"open"}
    assert py["tier1"] == answer["tier1"]
    bad = CliRunner().invoke(main, ["memory", "get_brief", "--as-of", "last tuesday", "-p", str(paths.root)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output  # a usage error naming the option
    assert "Invalid value for '--as-of': the value 'last tuesday' is not a date or date-time" in bad.output


def test_a_synapse_step_reading_a_rollup_is_refused_naming_the_step():
    from synix_assets.pipeline.spec import PipelineSpec
    from synix_assets.pipeline import builtin_prompts as prompts
    from synix_resources.errors import PipelineDefinitionError

    p = PipelineSpec("x")
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"])
    p.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
    p.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)
    p.open_loops("loops", from_="monthly", prompt=prompts.open_loops)
    with pytest.raises(PipelineDefinitionError, match="step 'loops' \\(loops\\): reads the turns of transcripts"):
        p.validate()
    q = PipelineSpec("y")
    q.source("exports", path="exports")
    q.merge("transcripts", from_=["exports"])
    q.identity_facts("identity", from_="transcripts")
    with pytest.raises(PipelineDefinitionError, match="not an open_loops layer"):
        q.validate()


def test_the_synapse_template_plans_offline_and_says_what_it_does_without_a_model(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from synix_assets.cli.main import main

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    root = tmp_path / "syn"
    runner = CliRunner()
    assert runner.invoke(main, ["init", str(root), "--template", "synapse", "--demo"]).exit_code == 0
    plan = runner.invoke(main, ["plan", "-p", str(root), "--json"])
    assert plan.exit_code == 0, plan.output
    said = json.loads(plan.output)
    text = json.dumps(said)
    assert "offline: no model; loops and facts by rules" in text
    assert "offline: no model; the rolling summary is extractive" in text


def test_a_loops_lineage_reaches_the_transcripts_of_the_turns_it_cites_and_its_layer_lists(offline):
    from synix_assets.app.memory import MemoryService

    paths, _ = offline
    tax = _loops(paths)["file the tax return before Friday"]
    transcripts = _layer(paths, "transcripts")
    svc = MemoryService(paths)
    try:
        tree = json.dumps(svc.lineage(tax.artifact_id))
        listed = svc.layer_page("loops", per_page=50)
    finally:
        svc.close()
    assert transcripts["s1"].artifact_id in tree and transcripts["s2"].artifact_id in tree
    assert tax.artifact_id in json.dumps(listed)


def test_the_synapse_layers_survive_a_toml_round_trip_with_the_same_step_versions(tmp_path):
    import runpy

    from synix_assets.examples import synapse
    from synix_assets.python_api.pipeline import Pipeline

    p = runpy.run_path(synapse.__file__)["pipeline"]
    q = Pipeline.from_toml(p.to_toml(), base_dir=tmp_path, namespace={})
    assert [(s.name, s.kind, s.config) for s in q.steps.values() if s.kind in ("window_fold", "loops", "identity")] \
        == [("rolling", "window_fold", {"window": 12}), ("loops", "loops", {}), ("identity", "identity", {})]
    assert all(p.version(layer) == q.version(layer) for layer in ("rolling", "loops", "identity"))
