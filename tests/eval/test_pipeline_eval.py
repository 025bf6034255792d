"""Eval through a real pipeline build: tiny LoCoMo/LongMemEval fixtures, provenance credit,
the shared response cache, and two pipelines (the stand-in for branches) side by side."""
from __future__ import annotations

import json
import shutil

import pytest
from eval_fixtures import LOCOMO_TINY, longmemeval_items

from synix_assets.eval import report, workspace
from synix_assets.eval.data import load_locomo, load_longmemeval
from synix_assets.eval.results import ResultsStore, results_path
from synix_assets.eval.retrieval import MemoryRetriever, RawRag
from synix_assets.eval.runner import EvalSettings, run_eval
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_resources.store.artifact_store import ArtifactStore

SETTINGS = EvalSettings(modes=("fts",), systems=("memory", "raw-rag"))


@pytest.fixture(autouse=True)
def _extractive(monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")  # offline summaries that keep the words


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH"):
            mp.delenv(var, raising=False)
        mp.setenv("SYNIX_LLM_PROVIDER", "extractive")  # offline summaries that keep the words
        mp.setenv("DAGSTER_HOME", str(tmp_path_factory.mktemp("dagster_home_unused")))
        yield tmp_path_factory.mktemp("eval")


@pytest.fixture(scope="module")
def locomo(env):
    data = env / "locomo-tiny.json"
    data.write_text(json.dumps([LOCOMO_TINY]))
    init_project(env / "main", template="monthly")
    project = ProjectPaths(env / "main")
    result = run_eval(load_locomo(data), project=project, branch="main", settings=SETTINGS,
                      results_db=results_path(project.state_dir))
    return project, data, result


def test_locomo_fixture_is_built_through_the_pipeline_and_scored(locomo):
    project, _, result = locomo
    run = result["run"]
    assert run["branch"] == "main" and run["questions"] == 5 and run["pipeline_version"]
    build = run["builds"][0]
    assert build["layers"]["transcripts"]["built"] == 3 and build["layers"]["episodes"]["built"] == 3
    assert build["layers"]["monthly"]["built"] == 3 and build["llm_calls"] > 0
    memory = result["systems"]["memory"]["fts"]
    # three sessions: by k=5 every hit chain has been read, so recall is complete at both levels
    assert memory["session_recall@5"] == 1.0 and memory["turn_recall@10"] == 1.0
    assert memory["provenance_complete"] == 1.0
    assert set(memory["altitude_top1"]) <= {"episodes", "monthly", "core"}
    assert sum(memory["altitude_top1"].values()) == 5
    raw = result["systems"]["raw-rag"]["fts"]
    assert raw["session_recall@1"] == 1.0 and raw["turn_recall@1"] == 1.0
    assert set(raw["by_category"]) == {"1", "2", "4"}
    # the scratch project is an ordinary project beside the user's state, which it never touches
    scratch = workspace.case_folder(project, "locomo", "conv-t")
    assert (scratch / ".synix" / "synix.db").is_file() and (scratch / ".synix" / "search.db").is_file()
    assert not project.store.exists()
    assert project.llm_cache.is_file() and not (scratch / ".synix" / "llm_cache.db").exists()


def test_a_summary_hit_is_credited_with_its_source_sessions(locomo):
    project, data, _ = locomo
    case = load_locomo(data).cases[0]
    paths = workspace.case_folder(project, "locomo", case.case_id) / ".synix"
    retriever = MemoryRetriever(case, paths / "search.db", paths / "synix.db")
    try:
        month = retriever.index.search("pottery", layers=["monthly"], limit=1)[0]
        sessions, turns = retriever.credit(month, "pottery", "fts")
        store = ArtifactStore(paths / "synix.db")
        leaves = store.leaves(month.artifact_id)
        store.close()
        expected = {a.metadata["meta.chat.conversation_id"].split("/")[1] for a in leaves}
        assert set(sessions) == expected and len(expected) == 1
        assert turns[0] in {"D2:2", "D3:1"}  # the pottery turn of that month comes first
        core = retriever.index.search("pottery", layers=["core"], limit=1)[0]
        sessions, _ = retriever.credit(core, "pottery", "fts")
        assert sorted(sessions) == ["session_1", "session_2", "session_3"]  # the fold derives from all
        assert retriever.complete(month) and retriever.complete(core)
    finally:
        retriever.close()


def test_memory_leaf_search_ranks_the_turns_exactly_as_raw_rag_so_it_finds_every_turn_raw_rag_finds(locomo, tmp_path):
    project, data, _ = locomo
    case = load_locomo(data).cases[0]
    paths = workspace.case_folder(project, "locomo", case.case_id) / ".synix"
    memory = MemoryRetriever(case, paths / "search.db", paths / "synix.db")
    raw = RawRag(case, tmp_path / "raw.sqlite", embeddings=False)

    def units(index, layer):
        return sorted(index.db.execute(
            "SELECT u.body, u.context, u.title FROM units u JOIN docs d ON d.id = u.doc_id "
            "WHERE d.layer = ? ORDER BY d.artifact_id, u.ord", [layer]).fetchall())

    try:
        # the memory's transcripts are the units raw RAG indexes: same text, context and title
        assert units(memory.index, "transcripts") == units(raw.index, "transcripts")
        assert units(raw.index, "transcripts")[0][0].startswith(("Alice: ", "Bob: "))
        for q in case.questions:
            leaves, _ = memory.leaf_ranking(q.text, "fts", 10)
            baseline, _ = raw.rank(q.text, "fts", 10)
            # raw RAG ranks 10 turns, the leaf ranking 30 (the pool summary hits are read in)
            assert (leaves.sessions, leaves.turns[:10]) == (baseline.sessions, baseline.turns), q.text
            fused, _ = memory.rank(q.text, "fts", 10)
            assert set(baseline.turns[:10]) <= set(fused.turns[:10]), q.text
    finally:
        memory.close()
        raw.close()


def test_a_question_naming_a_month_finds_that_months_session_first_where_raw_rag_ranks_by_words(locomo, tmp_path):
    project, data, _ = locomo
    case = load_locomo(data).cases[0]
    paths = workspace.case_folder(project, "locomo", case.case_id) / ".synix"
    memory = MemoryRetriever(case, paths / "search.db", paths / "synix.db")
    raw = RawRag(case, tmp_path / "raw.sqlite", embeddings=False)
    question = "Where did Alice's sister move for her robotics job, she said in May 2023?"
    try:
        baseline, _ = raw.rank(question, "fts", 10)
        assert baseline.sessions[0] == "session_1"  # the words: the move, told in January
        for ranking, _ in (memory.rank(question, "fts", 10), memory.leaf_ranking(question, "fts", 10)):
            # the memory knows session 3 is dated 2 May 2023: it comes first, and its turn
            # about the sister is lifted (not above January's turn that matches every word)
            assert ranking.sessions[0] == "session_3"
            assert ranking.turns.index("D3:3") < baseline.turns.index("D3:3")
            assert set(ranking.sessions[:2]) == set(baseline.sessions[:2])  # nothing is lost
    finally:
        memory.close()
        raw.close()


def test_second_eval_of_an_unchanged_pipeline_makes_zero_llm_calls(locomo):
    project, data, first = locomo
    again = run_eval(load_locomo(data), project=project, branch="main", settings=SETTINGS)
    assert again["run"]["build_llm_calls"] == 0 and again["run"]["builds"][0]["noop"]
    recall = [k for k in first["systems"]["memory"]["fts"] if "recall" in k or "ndcg" in k]
    assert recall and all(again["systems"]["memory"]["fts"][k] == first["systems"]["memory"]["fts"][k]
                          for k in recall)
    # a fresh scratch workspace rebuilds everything, all from the project's response cache
    shutil.rmtree(project.state_dir / "eval" / "locomo")
    fresh = run_eval(load_locomo(data), project=project, branch="main", settings=SETTINGS)
    assert fresh["run"]["build_llm_calls"] == 0
    assert fresh["run"]["builds"][0]["layers"]["episodes"]["built"] == 3


def test_two_pipelines_are_compared_side_by_side(locomo, env):
    project, data, _ = locomo
    init_project(env / "topical", template="topical")
    topical = ProjectPaths(env / "topical")
    result = run_eval(load_locomo(data), project=topical, branch="topical",
                      settings=EvalSettings(modes=("fts",), systems=("memory",)),
                      results_db=results_path(topical.state_dir))
    assert "topics" in result["run"]["builds"][0]["layers"]
    entries = []
    for p in (project, topical):
        with ResultsStore(results_path(p.state_dir)) as store:
            entries += store.latest("locomo")
    md = report.markdown(entries)
    for system in ("main", "topical", "raw-rag"):
        assert f"| locomo | {system} | fts |" in md
    page = report.html_report(entries)
    for needle in ("main (fts)", "topical (fts)", "raw-rag (fts)", "altitude of the top hit", "recall by k",
                   "session recall@5 by category", "S@5", "T@10", "provenance", "build LLM calls"):
        assert needle in page
    json_out = report.to_json(entries)
    assert set(json_out["results"]["locomo"]) == {"main", "topical", "raw-rag"}
    assert json_out["results"]["locomo"]["topical"]["fts"]["session_recall@5"] is not None


def test_longmemeval_fixture_through_the_pipeline_reports_its_own_metrics(env):
    data = env / "longmemeval_s.json"
    data.write_text(json.dumps(longmemeval_items("s")))
    init_project(env / "lme", template="monthly")
    project = ProjectPaths(env / "lme")
    result = run_eval(load_longmemeval(data), project=project, branch="main", settings=SETTINGS,
                      results_db=results_path(project.state_dir))
    assert result["run"]["variant"] == "s" and result["run"]["cases"] == 2
    raw = result["systems"]["raw-rag"]["fts"]
    # "boat": both evidence sessions share its words; "violin": one session names Maya's violin
    assert raw["session_recall@5"] == 1.0 and raw["session_recall_all@5"] == 1.0
    assert 0 < raw["session_ndcg@5"] <= 1.0 and raw["turn_recall@10"] == 1.0
    assert raw["freshness_questions"] == 1  # the boat question: evidence in January and April
    memory = result["systems"]["memory"]["fts"]
    assert memory["provenance_complete"] == 1.0 and memory["session_recall@10"] == 1.0
    assert set(memory["by_category"]) == {"knowledge-update", "single-session-user"}
    with ResultsStore(results_path(project.state_dir)) as store:
        md = report.markdown(store.latest())
    assert "LongMemEval metrics" in md and "| main | fts |" in md


class FakeAnthropic:
    """The Messages API behind the real SDK: answers from the memory in the prompt, judges by
    whether the gold answer is in the generated one; records every request."""

    def __init__(self):
        self.sent: list[dict] = []

    def __call__(self, request):
        import httpx2

        body = json.loads(request.content)
        self.sent.append(body)
        prompt = body["messages"][0]["content"]
        prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
        if "Your task is to label an answer" in prompt:
            gold = prompt.rsplit("Gold answer: ", 1)[1].split("\n")[0].lower()
            answer = prompt.rsplit("Generated answer: ", 1)[1].split("\n")[0].lower()
            text = '{"label": "CORRECT"}' if gold in answer else '{"label": "WRONG"}'
        else:
            memory, question = prompt.split("Question:")[0], prompt.split("Question:")[1].lower()
            answers = {"puppy": "Biscuit", "sister": "Lisbon", "bird": "a parrot", "instrument": "cello",
                       "pottery": "May 2023"}
            text = next((a for k, a in answers.items() if k in question and a.split()[-1] in memory),
                        "not mentioned")
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0}})


def test_qa_answers_from_memory_and_is_judged_through_the_anthropic_sdk(locomo):
    import httpx2

    project, data, first = locomo
    assert "no model is configured" in first["run"]["qa_note"]  # offline: retrieval only, and why
    api = FakeAnthropic()
    settings = EvalSettings(modes=("fts",), systems=("memory", "raw-rag", "full-context"), qa=True,
                            qa_mode="fts", qa_options={
                                "provider": "anthropic", "api_key": "sk-ant-test", "env": {},
                                "http_client": httpx2.Client(transport=httpx2.MockTransport(api))})
    result = run_eval(load_locomo(data), project=project, branch="main", settings=settings)
    run = result["run"]
    assert run["qa_note"] is None and run["qa_model"] == "anthropic:claude-sonnet-4-6"
    assert "Mem0 LoCoMo" in run["qa_protocol"]
    answers = [b for b in api.sent if "Memory excerpts" in b["messages"][0]["content"]]
    assert len(answers) == 5 * 3  # 5 questions x 3 systems; equal verdict prompts come from the cache
    judge = next(b for b in api.sent if "Your task is to label" in b["messages"][0]["content"])
    assert "Gold answer:" in judge["messages"][0]["content"]
    answer = next(b for b in api.sent if "Memory excerpts" in b["messages"][0]["content"])
    assert "Biscuit" in answer["messages"][0]["content"]
    for system in ("memory", "raw-rag", "full-context"):
        entry = result["systems"][system]["fts" if system != "full-context" else "full"]
        assert entry["qa_accuracy"] is not None and entry["tokens_per_question"] == 240.0
        assert entry["usd_per_question"] > 0
    rows = [r for r in result["questions"] if r["system"] == "full-context"]
    assert [r["qa"]["answer"] for r in rows] == ["Biscuit", "cello", "May 2023", "a parrot", "Lisbon"]
    assert result["systems"]["full-context"]["full"]["qa_accuracy"] == 1.0
    # the memory's answers also read the context document the pipeline built
    memory_prompts = [b for b in api.sent if "context document" in b["messages"][0]["content"]]
    assert len(memory_prompts) == 5
    # an unchanged re-run answers and judges from the shared response cache
    api.sent.clear()
    again = run_eval(load_locomo(data), project=project, branch="main", settings=settings)
    assert api.sent == [] and again["systems"]["raw-rag"]["fts"]["qa_accuracy"] == \
        result["systems"]["raw-rag"]["fts"]["qa_accuracy"]
