"""The generated MEME-style benchmark (issue 43): a seeded, deterministic world whose expected
answers come from the generator's own timeline; the memory (the temporal fact layer through the
brief and `as_of`, forgotten with `forget`) and raw RAG answer the same probes, per task type."""
from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from click.testing import CliRunner

from synix_assets.eval import meme


def test_the_same_seed_generates_the_same_world_and_another_seed_another():
    a, b, c = meme.generate(5), meme.generate(5), meme.generate(6)
    assert [asdict(s) for s in a.sessions] == [asdict(s) for s in b.sessions] and a.probes == b.probes
    assert [asdict(s) for s in a.sessions] != [asdict(s) for s in c.sessions]


def test_every_task_type_has_probes_and_the_forgotten_conversations_state_something():
    world = meme.generate(7)
    tasks = {p["task"] for p in world.probes}
    assert tasks == set(meme.TASKS)
    forgotten = set(world.forget)
    assert forgotten and all(any(f.session == s for f in world.facts) for s in forgotten)
    assert all(p["phase"] == "after" for p in world.probes if p["task"] == "deletion")


def test_the_expected_answers_follow_the_timeline_the_rules_and_the_forget():
    world = meme.generate(7)
    person = next(f for f in world.facts if f.attribute == "employer")
    office = meme.truth(world, person.subject, "office", person.day[:10] + "T23:00:00Z")
    assert f"employer={meme.truth(world, person.subject, 'employer', person.day[:10] + 'T23:00:00Z')} -> office={office}" \
        in world.rules
    assert meme.truth(world, "Nobody Here", "location", None) == meme.NOT_KNOWN
    gone = next(f for f in world.facts if f.session in world.forget)
    after = meme.truth(world, gone.subject, gone.attribute, None, tuple(world.forget))
    assert after != gone.value  # the forgotten value is never the expected answer afterwards


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    from synix_assets.eval.meme_run import run_meme

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYNIX_LLM_PROVIDER", "extractive")  # the rules: offline, as the docs' table
        return run_meme(tmp_path_factory.mktemp("meme"), seed=11, sessions=16)


def test_the_memory_answers_every_probe_type_and_raw_rag_loses_where_time_matters(ran):
    mem, rag = ran["scores"]["memory"], ran["scores"]["raw-rag"]
    assert all(mem[t]["accuracy"] == 1.0 for t in meme.TASKS if mem[t]["probes"]), mem
    assert rag["tracking"]["accuracy"] < mem["tracking"]["accuracy"]
    wrong = [p for p in ran["per_probe"] if p["memory"].casefold() != p["expected"].casefold()]
    assert not wrong


def test_after_forget_no_answer_of_the_memory_is_a_forgotten_value(ran):
    for p in ran["per_probe"]:
        if p["task"] == "deletion":
            assert p["memory"] == p["expected"]


def test_synix_eval_meme_prints_the_table_and_json_with_both_systems(tmp_path, monkeypatch):
    from synix_assets.cli.main import main

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    out = CliRunner().invoke(main, ["eval", "meme", "--seed", "2", "--sessions", "10", "--people", "3",
                                    "--dir", str(tmp_path / "m"), "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert set(result["scores"]) == {"memory", "raw-rag"} and set(result["scores"]["memory"]) == set(meme.TASKS)
    table = CliRunner().invoke(main, ["eval", "meme", "--seed", "2", "--sessions", "10", "--people", "3",
                                      "--dir", str(tmp_path / "m")])
    assert table.exit_code == 0 and "tracking" in table.stdout and "raw RAG" in table.stdout


def test_synix_eval_meme_outside_a_project_without_dir_is_one_usage_line(tmp_path, monkeypatch):
    from synix_assets.cli.main import main

    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["eval", "meme"])
    assert out.exit_code == 2 and "give --dir FOLDER" in out.output and "Traceback" not in out.output


def test_unseen_phrasings_are_ones_the_rules_do_not_read_and_zero_keeps_the_world_unchanged():
    from synix_assets.engine.temporal import rule_statements

    assert [asdict(s) for s in meme.generate(4, unseen=0.0).sessions] == [asdict(s) for s in meme.generate(4).sessions]
    world = meme.generate(4, unseen=1.0)
    said = [t.text for s in world.sessions for t in s.turns if t.role == "user"]
    values = {f.value for f in world.facts}
    stating = [text for text in said if any(v in text for v in values)]
    assert stating and not [text for text in stating
                            if rule_statements({"turn_id": "x", "ts": "t", "content": text})]


def test_a_second_run_in_the_same_folder_starts_from_a_fresh_memory_and_scores_the_same(tmp_path, monkeypatch):
    from synix_assets.eval.meme_run import run_meme

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    first = run_meme(tmp_path, seed=5, sessions=10, people=3)
    again = run_meme(tmp_path, seed=5, sessions=10, people=3)  # the first run's forget left tombstones
    assert again["scores"] == first["scores"]


def test_a_folder_the_runner_did_not_make_is_never_removed(tmp_path):
    from synix_assets.eval.meme_run import fresh_memory
    from synix_resources.errors import EvalError

    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "notes.txt").write_text("mine")
    with pytest.raises(EvalError, match="was not made by `synix eval meme`"):
        fresh_memory(tmp_path)
    assert (tmp_path / "memory" / "notes.txt").read_text() == "mine"
