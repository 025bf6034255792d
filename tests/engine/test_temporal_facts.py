"""The temporal fact layer (`pipeline.facts`, issue 43 / design 004 §2): facts with valid_from /
valid_until, invalidated never deleted, citing their turns; declared rules whose facts follow
their premise; built incrementally (one reading per conversation, records keyed by content),
shown by the brief's Tier 2 now and `as_of`, and forgotten with their conversation (what they
had invalidated valid again)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from synix_assets.engine import temporal
from synix_assets.engine.facts import model_statements
from synix_assets.eval.data import Case, Session, Turn
from synix_assets.eval.source import write_export
from synix_resources.errors import PipelineDefinitionError

PIPELINE = '''from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("facts-test", agent="t")
pipeline.source("exports", path="exports", format="auto")
pipeline.merge("transcripts", from_=["exports"])
pipeline.facts("facts", from_="transcripts", prompt=prompts.temporal_facts,
               implies=["employer=Bluefin -> office=Porto", "employer=Tidewell -> office=Ghent"])
pipeline.search_index("memory-index", from_=["transcripts"])
'''
JAN = ["I use Vim for everything. I moved to Berlin.", "I work at Bluefin."]
MAR = ["I switched from Vim to Helix.", "I moved to Lisbon last week.", "I joined Tidewell."]
MAY = ["My project Atlas uses Postgres."]


def _session(sid: str, day: str, texts: list[str]) -> Session:
    turns = []
    for i, text in enumerate(texts):
        turns += [Turn(f"{sid}-{2 * i + 1}", "user", "user", text), Turn(f"{sid}-{2 * i + 2}", "assistant", "assistant", "Noted.")]
    return Session(sid, f"{day}T09:00:00Z", tuple(turns))


def _write(root: Path, *sessions: Session) -> None:
    write_export(Case("t", list(sessions), []), root / "exports" / "sessions.json")


def _facts(paths) -> dict[tuple[str, str, str], dict]:
    from synix_assets.app.memory.facts import all_facts

    store = paths.open_store(read_only=True)
    try:
        return {(f["subject"], f["attribute"], f["value"]): f for f in all_facts(store, "facts")}
    finally:
        store.close()


def _index(paths) -> dict:
    store = paths.open_store(read_only=True)
    try:
        return store.current_index("facts")
    finally:
        store.close()


def _brief(paths, query: str, as_of: str | None = None) -> dict:
    from synix_assets.app.memory import MemoryService

    svc = MemoryService(paths)
    try:
        return svc.brief(query, budget_tokens=3000, as_of=as_of)
    finally:
        svc.close()


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """Every build here is offline (the rules), as the module's first build was."""
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYNIX_LLM_PROVIDER", "extractive")
        return _first_build(tmp_path_factory, run_build, ProjectPaths)


def _first_build(tmp_path_factory, run_build, ProjectPaths):
    root = tmp_path_factory.mktemp("facts") / "mem"
    root.mkdir()
    (root / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    _write(root, _session("jan", "2025-01-10", JAN), _session("mar", "2025-03-20", MAR))
    paths = ProjectPaths(root)
    report = run_build(paths)
    return paths, report


def test_a_later_turn_invalidates_a_fact_which_is_kept_with_its_interval_and_the_turn_that_ended_it(built):
    paths, _ = built
    facts = _facts(paths)
    berlin, lisbon = facts[("user", "location", "Berlin")], facts[("user", "location", "Lisbon")]
    assert berlin["valid_from"].startswith("2025-01-10") and berlin["valid_until"].startswith("2025-03-20")
    assert berlin["invalidated_by"]["turn_id"] == "t/mar#mar-3" or berlin["invalidated_by"]["value"] == "Lisbon"
    assert lisbon["valid_until"] is None and lisbon["evidence"] and lisbon["sessions"] == ["t/mar"]
    vim = facts[("user", "uses", "Vim")]
    assert vim["valid_until"] is not None and facts[("user", "uses", "Helix")]["valid_until"] is None


def test_a_fact_implied_by_a_declared_rule_holds_exactly_while_its_premise_does(built):
    paths, _ = built
    facts = _facts(paths)
    porto, ghent = facts[("user", "office", "Porto")], facts[("user", "office", "Ghent")]
    bluefin = facts[("user", "employer", "Bluefin")]
    assert porto["derived_from"] and porto["rule"] == "employer=Bluefin -> office=Porto"
    assert (porto["valid_from"], porto["valid_until"]) == (bluefin["valid_from"], bluefin["valid_until"])
    assert ghent["valid_until"] is None and porto["evidence"] == bluefin["evidence"]


def test_each_fact_record_descends_from_the_readings_of_the_conversations_that_state_and_end_it(built):
    paths, _ = built
    store = paths.open_store(read_only=True)
    try:
        berlin = store.get(_facts(paths)[("user", "location", "Berlin")]["record_id"])
        titles = {a.metadata.get("meta.chat.conversation_id") or a.group_key
                  for a in store.leaves(berlin.artifact_id, max_depth=8, max_count=100)}
    finally:
        store.close()
    assert titles == {"t/jan", "t/mar"}  # stated in January, ended in March


def test_the_brief_tier2_shows_the_facts_valid_now_and_as_of_an_earlier_day_with_intervals(built):
    paths, _ = built
    now = _brief(paths, "setup")["tier2"]
    held = {(f["attribute"], f["value"]) for f in now["facts"]}
    assert ("location", "Lisbon") in held and ("location", "Berlin") not in held and ("uses", "Helix") in held
    march = _brief(paths, "setup", as_of="2025-02-15")
    then = {(f["attribute"], f["value"]) for f in march["tier2"]["facts"]}
    assert {("location", "Berlin"), ("uses", "Vim"), ("office", "Porto")} <= then
    assert ("location", "Lisbon") not in then and "## Facts (valid at 2025-02-15" in march["text"]
    assert all(f["record_id"] and f["valid_from"] for f in march["tier2"]["facts"])


def test_a_second_run_rebuilds_nothing_and_a_new_conversation_is_the_only_one_read(built):
    from synix_assets.app.run import run_build

    paths, _ = built
    before = {k: f["record_id"] for k, f in _facts(paths).items()}
    readings = lambda: {gk: r.artifact_id for gk, r in _index(paths).items() if not gk.startswith("~")}
    first = readings()
    again = run_build(paths)
    assert again.layers.get("facts", {}).get("built", 0) == 0 and readings() == first
    _write(paths.root, _session("jan", "2025-01-10", JAN), _session("mar", "2025-03-20", MAR),
           _session("may", "2025-05-02", MAY))
    run_build(paths)
    grown = readings()
    assert len(grown) == 3 and all(grown[k] == v for k, v in first.items())  # the two read before: not again
    after = {k: f["record_id"] for k, f in _facts(paths).items()}
    assert ("Atlas", "uses", "Postgres") in after
    assert all(after[k] == v for k, v in before.items())  # no earlier fact got a new version


def test_forgetting_a_conversation_removes_its_facts_and_makes_what_they_invalidated_valid_again(built):
    from synix_assets.app.forget import forget

    paths, _ = built
    forget(paths, "t/mar")
    facts = _facts(paths)
    assert not [k for k in facts if k[2] in ("Lisbon", "Helix", "Tidewell", "Ghent")]
    assert facts[("user", "location", "Berlin")]["valid_until"] is None
    assert facts[("user", "office", "Porto")]["valid_until"] is None  # the cascade follows its premise
    held = {(f["attribute"], f["value"]) for f in _brief(paths, "where do I live")["tier2"]["facts"]}
    assert ("location", "Berlin") in held and ("uses", "Vim") in held


def test_rules_read_first_person_third_person_and_project_statements():
    said = lambda text: [(s["subject"], s["attribute"], s["value"], s["op"]) for s in
                         temporal.rule_statements({"turn_id": "x", "ts": "t", "content": text})]
    assert said("I switched from Vim to Helix.") == [("user", "uses", "Vim", "end"), ("user", "uses", "Helix", "add")]
    assert said("Mira Okafor moved to Porto.") == [("Mira Okafor", "location", "Porto", "set")]
    assert said("Project Atlas switched from Postgres to SQLite.") == [("Atlas", "uses", "Postgres", "end"),
                                                                       ("Atlas", "uses", "SQLite", "add")]
    assert said("I no longer use Docker.") == [("user", "uses", "Docker", "end")]
    assert said("The weather is nice. Then I went home.") == []
    assert temporal.rule_statements({"turn_id": "x", "ts": "t", "role": "assistant", "content": "I moved to Oslo."}) == []


def test_a_restated_value_adds_evidence_without_a_new_interval_and_an_end_closes_a_multi_value():
    st = lambda tid, ts, attr, value, op="set": {"turn_id": tid, "ts": ts, "session_id": "s", "subject": "user",
                                                 "attribute": attr, "value": value, "op": op}
    facts = temporal.replay([st("a", "1", "location", "Oslo"), st("b", "2", "location", "oslo"),
                             st("c", "3", "uses", "Docker", "add"), st("d", "4", "uses", "Git", "add"),
                             st("e", "5", "uses", "Docker", "end")])
    oslo = next(f for f in facts if f["value"] == "Oslo")
    assert oslo["evidence"] == ["a", "b"] and oslo["valid_until"] is None
    uses = {f["value"]: f["valid_until"] for f in facts if f["attribute"] == "uses"}
    assert uses == {"Docker": "5", "Git": None}


def test_a_model_answer_becomes_statements_and_one_that_is_not_the_json_asked_for_is_refused():
    user = [{"turn_id": "s-1", "ts": "2025-01-01T00:00:00Z", "session_id": "s", "role": "user", "content": "x"}]
    good = json.dumps({"statements": [{"turn_id": "s-1", "subject": "Mira", "attribute": "Location",
                                       "value": "Porto", "op": "set"}]})
    assert model_statements("Sure: " + good, user, "model m") == [
        {"turn_id": "s-1", "ts": "2025-01-01T00:00:00Z", "session_id": "s", "subject": "Mira",
         "attribute": "location", "value": "Porto", "op": "set", "extractor": "model m"}]
    assert model_statements('{"statements": [{"turn_id": "nope", "subject": "a", "attribute": "b", "value": "c"}]}',
                            user, "m") is None
    assert model_statements("no json here", user, "m") is None


def test_a_rule_that_is_not_attr_value_arrow_attr_value_is_refused_naming_the_step():
    from synix import Pipeline
    from synix_assets.pipeline import builtin_prompts as prompts

    p = Pipeline("x")
    p.source("e", path="e")
    p.merge("transcripts", from_=["e"])
    with pytest.raises(PipelineDefinitionError, match=r"step 'facts' \(facts\): rule 'employer Acme' is not"):
        p.facts("facts", from_="transcripts", prompt=prompts.temporal_facts, implies=["employer Acme"])


def test_the_facts_layer_survives_a_toml_round_trip_with_the_same_step_version(tmp_path):
    from synix import Pipeline
    from synix_assets.pipeline import builtin_prompts as prompts

    p = Pipeline("x", base_dir=tmp_path)
    p.source("e", path="e")
    p.merge("transcripts", from_=["e"])
    p.facts("facts", from_="transcripts", prompt=prompts.temporal_facts, implies=["employer=Acme -> office=Oslo"])
    p.validate()
    back = Pipeline.from_toml(p.to_toml(), base_dir=tmp_path)
    assert back.steps["facts"].config["implies"] == ["employer=Acme -> office=Oslo"]
    assert back.version("facts") == p.version("facts")


def test_a_list_of_tools_is_one_fact_each_and_a_new_clause_is_not_a_tool():
    said = lambda text: [(s["attribute"], s["value"]) for s in
                         temporal.rule_statements({"turn_id": "x", "ts": "t", "content": text})]
    assert said("I use Vim, tmux and fzf.") == [("uses", "Vim"), ("uses", "tmux"), ("uses", "fzf")]
    assert said("I use Vim and I work at Northwind Labs.") == [("employer", "Northwind Labs"), ("uses", "Vim")]


def test_tier2_as_of_is_the_same_from_python_http_mcp_and_the_cli(built):
    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from synix_assets.app.memory import MemoryService
    from synix_assets.cli.main import main
    from synix_assets.serve.app import create_app

    paths, _ = built
    python = _brief(paths, "where", as_of="2025-02-15")["tier2"]
    svc = MemoryService(paths)
    try:
        http = TestClient(create_app(svc)).get("/v1/brief", params={"query": "where", "as_of": "2025-02-15",
                                                                    "budget_tokens": 3000}).json()["tier2"]
    finally:
        svc.close()
    out = CliRunner().invoke(main, ["memory", "get_brief", "where", "--as-of", "2025-02-15", "--budget-tokens", "3000",
                                    "--json", "-p", str(paths.root)])
    assert out.exit_code == 0, out.output
    cli = json.loads(out.stdout)["tier2"]
    assert python["facts"] == http["facts"] == cli["facts"] == _mcp_tier2(paths)["facts"]
    assert python["as_of"] == "2025-02-15T00:00:00Z" and python["facts"]


def _mcp_tier2(paths) -> dict:
    """Tier 2 through the official `mcp` client calling the server's get_brief tool."""
    import asyncio

    from mcp import Client

    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.mcp_server import build_server

    async def session(server):
        async with Client(server) as client:
            result = await client.call_tool("get_brief", {"query": "where", "as_of": "2025-02-15",
                                                          "budget_tokens": 3000})
            return json.loads("".join(getattr(c, "text", "") for c in result.content))

    service = MemoryService(paths)
    try:
        return asyncio.run(session(build_server(service)))["tier2"]
    finally:
        service.close()


def test_with_a_model_each_conversation_is_one_call_whose_json_statements_become_the_facts(tmp_path, monkeypatch):
    """The model path: the `fake` provider answers the facts prompt with statements the rules
    could never find ("hometown"), so the facts can only have come from the model's JSON."""
    import re

    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths
    from synix_resources.llm import fake

    def answer(request):
        assert '"statements"' in request.prompt  # the facts prompt, not the loops one
        ids = re.findall(r"^\[([^\]]+)\] user:", request.prompt, re.M)
        return json.dumps({"statements": [{"turn_id": ids[0], "subject": "user", "attribute": "hometown",
                                           "value": f"Seville ({len(ids)} turns)", "op": "set"}]})

    monkeypatch.setattr(fake, "extract_answer", answer)
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    root = tmp_path / "mem"
    root.mkdir()
    (root / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    _write(root, _session("jan", "2025-01-10", JAN), _session("mar", "2025-03-20", MAR))
    paths = ProjectPaths(root)
    first = run_build(paths)
    assert first.layers["facts"]["llm_calls"] == 2  # one per conversation
    facts = _facts(paths)
    hometown = {k[2]: f for k, f in facts.items() if k[1] == "hometown"}
    assert set(hometown) == {"Seville (2 turns)", "Seville (3 turns)"}
    assert hometown["Seville (2 turns)"]["valid_until"] == hometown["Seville (3 turns)"]["valid_from"]
    assert hometown["Seville (3 turns)"]["extractor"].startswith("model ")
    assert not [k for k in facts if k[1] == "location"]  # the rules did not read these turns
    assert run_build(paths).layers.get("facts", {}).get("llm_calls", 0) == 0
