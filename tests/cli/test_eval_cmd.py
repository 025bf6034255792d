"""`synix eval` from the command line: baselines without a project, errors, and reports."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from synix_assets.cli.main import main
import xml.etree.ElementTree as ET
import re

SAMPLE = {
    "sample_id": "conv-cli",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten called Pepper."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! I bought a red kayak."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I paddled the kayak across the lake."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "My brother opened a bakery in Porto."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's kitten?", "answer": "Pepper",
         "evidence": ["D1:1"], "category": 4},
        {"question": "Where is the bakery?", "answer": "Porto", "evidence": ["D2:2"],
         "category": 1},
        {"question": "Which pastime involves water?", "answer": "kayaking",
         "evidence": ["D1:2"], "category": 3},  # no shared content word: a full-text miss
        {"question": "Is this adversarial?", "evidence": ["D1:1"], "category": 5},  # excluded
    ],
}


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    return path


def run(*args):
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=True)


def baseline(data_file, tmp_path, *extra):
    return run("locomo", "--data", str(data_file), "--no-memory", "--baseline", "raw-rag",
               "--results", str(tmp_path / "results.db"), *extra)


def test_raw_rag_json_keeps_the_metric_names_with_known_recall(data_file, tmp_path):
    result = baseline(data_file, tmp_path, "--modes", "fts", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["questions"] == 3 and list(out["systems"]) == ["raw-rag"]
    assert "questions 3/3" in result.stderr  # progress goes to stderr, stdout stays JSON
    fts = out["systems"]["raw-rag"]["fts"]
    assert fts["session_recall@1"] == round(2 / 3, 4)
    assert fts["turn_recall@10"] == round(2 / 3, 4)
    assert fts["by_category"]["3"]["turn_recall@10"] == 0.0
    assert fts["by_category"]["4"]["turn_recall@1"] == 1.0
    assert fts["p95_ms"] >= fts["p50_ms"] >= 0
    assert "no model is configured" in out["run"]["qa_note"]


def test_memory_without_a_project_is_one_clean_error(data_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("locomo", "--data", str(data_file), "--modes", "fts")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "pipeline.py" in lines[0]


def test_full_context_without_a_model_is_one_clean_error(data_file, tmp_path):
    result = baseline(data_file, tmp_path, "--baseline", "full-context", "--modes", "fts")
    assert result.exit_code == 1 and "needs a model" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("content, needle", [
    (None, "no such file"),
    ("{not json", "not a readable LoCoMo JSON file"),
    ('{"a": 1}', "not LoCoMo data"),
    ('[{"conversation": "x"}]', "not LoCoMo data"),
])
def test_bad_file_is_one_clean_line(tmp_path, content, needle):
    path = tmp_path / "data.json"
    if content is not None:
        path.write_text(content)
    result = baseline(path, tmp_path, "--modes", "fts")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]
    assert "Traceback" not in result.output


def _sample(**changes) -> dict:
    return {**json.loads(json.dumps(SAMPLE)), **changes}


@pytest.mark.parametrize("content, needle", [
    ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
    (json.dumps([_sample(qa=None)]), "sample 'conv-cli': no 'qa' list"),
    (json.dumps([{k: v for k, v in SAMPLE.items() if k != "qa"}]), "sample 'conv-cli': no 'qa' list"),
    (json.dumps([_sample(qa=[{**SAMPLE["qa"][0], "category": "one"}])]),
     "sample 'conv-cli' question 0: category 'one' is not 1-5"),
    (json.dumps([_sample(qa=[{**SAMPLE["qa"][0], "evidence": ["D9:9"]}])]),
     "no LoCoMo question to evaluate (1 skipped"),
    (json.dumps([_sample(conversation={**SAMPLE["conversation"], "session_2": ["a turn as a string"]})]),
     "sample 'conv-cli' session_2: expected a list of turn objects"),
    (json.dumps([_sample(qa=[{**SAMPLE["qa"][0], "evidence": 5}])]),
     "sample 'conv-cli' question 0: evidence '5' is not a list of dialogue ids (D1:3)"),
    (json.dumps([_sample(qa=[{**SAMPLE["qa"][0], "category": "@HUGE@"}])]).replace('"@HUGE@"', "4" * 5000),
     "[0].qa[0].category: a 5,000-digit integer, longer than Python reads"),
    (json.dumps([_sample(qa=[{**SAMPLE["qa"][0], "evidence": ["D" + "1" * 5000 + ":1"]}])]),
     "no LoCoMo question to evaluate (1 skipped"),
    (json.dumps([_sample(conversation={**SAMPLE["conversation"], "session_" + "2" * 5000: []})]),
     "sample 'conv-cli': a session key is numbered with a 5,000-digit integer"),
    (json.dumps([_sample(conversation={**SAMPLE["conversation"], "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten \udcff"}]})]),
     "[0].conversation.session_1[0].text: has a lone surrogate escape \\udcff"),
], ids=["deep", "qa-none", "qa-missing", "category-word", "evidence-unknown", "turn-string", "evidence-int",
        "category-5000-digits", "evidence-5000-digits", "session-key-5000-digits", "turn-surrogate"])
def test_malformed_locomo_file_is_one_line_naming_the_file_and_records_no_run(tmp_path, content, needle):
    path = tmp_path / "bad-locomo.json"
    path.write_text(content)
    result = baseline(path, tmp_path, "--modes", "fts")
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: ") and needle in lines[0], lines
    assert not (tmp_path / "results.db").exists()


def test_locomo_conversations_matching_no_sample_is_one_clean_error(data_file, tmp_path):
    result = baseline(data_file, tmp_path, "--modes", "fts", "--conversations", "conv-nope")
    assert result.exit_code == 1
    assert "no LoCoMo question to evaluate (none in the selected conversations)" in result.stderr


def _lme(sessions) -> str:
    return json.dumps([{"question_id": "q1", "question": "What did I buy?", "answer": "a kayak",
                        "question_type": "single-session-user", "answer_session_ids": ["s1"],
                        "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
                        "haystack_sessions": sessions}])


@pytest.mark.parametrize("sessions, needle", [
    ([["I bought a kayak."]], "question 'q1' session 0 turn 0: expected an object with 'role' and text 'content'"),
    ([[{"role": "user", "content": ["not", "text"]}]], "question 'q1' session 0 turn 0"),
    (["I bought a kayak."], "question 'q1' session 0: expected a list of turns"),
    ([], "no LongMemEval question to evaluate (1 skipped"),
])
def test_malformed_longmemeval_file_is_one_line_naming_the_file(tmp_path, sessions, needle):
    path = tmp_path / "longmemeval_s.json"
    path.write_text(_lme(sessions))
    result = run("longmemeval", "--data", str(path), "--no-memory", "--baseline", "raw-rag",
                 "--results", str(tmp_path / "results.db"), "--modes", "fts")
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: ") and needle in lines[0], lines
    assert not (tmp_path / "results.db").exists()


def _lme_run(tmp_path, items: list, *extra):
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(items))
    return path, run("longmemeval", "--data", str(path), "--no-memory", "--baseline", "raw-rag",
                     "--results", str(tmp_path / "results.db"), "--modes", "fts", *extra)


def test_a_longmemeval_item_without_a_question_is_skipped_and_counted_not_searched(tmp_path):
    good = json.loads(_lme([[{"role": "user", "content": "I bought a kayak.", "has_answer": True}]]))[0]
    silent = {k: v for k, v in good.items() if k != "question"} | {"question_id": "q2"}
    path, result = _lme_run(tmp_path, [good, silent], "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["questions"] == 1
    from synix_assets.eval.data import load_longmemeval
    assert load_longmemeval(path).skipped_questions == 1
    _, result = _lme_run(tmp_path, [silent])
    assert result.exit_code == 1 and "search query is empty" not in result.stderr
    assert "no LongMemEval question to evaluate (1 skipped for missing evidence or text)" in result.stderr


@pytest.mark.parametrize("key, value", [("haystack_dates", 5), ("haystack_session_ids", "s1"),
                                        ("answer_session_ids", 7)])
def test_a_longmemeval_list_field_that_is_not_a_list_is_one_line_naming_it(tmp_path, key, value):
    item = json.loads(_lme([[{"role": "user", "content": "I bought a kayak.", "has_answer": True}]]))[0]
    path, result = _lme_run(tmp_path, [{**item, key: value}])
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == (f"error: {path}: not LongMemEval data — question 'q1': '{key}' is "
                                     f"{str(value)!r}, not a list — pass longmemeval_s.json, "
                                     "longmemeval_m.json or longmemeval_oracle.json")


def test_well_formed_longmemeval_turns_still_evaluate(tmp_path):
    path = tmp_path / "longmemeval_s.json"
    path.write_text(_lme([[{"role": "user", "content": "I bought a kayak.", "has_answer": True}]]))
    result = run("longmemeval", "--data", str(path), "--no-memory", "--baseline", "raw-rag",
                 "--results", str(tmp_path / "results.db"), "--modes", "fts", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["questions"] == 1


def test_unknown_mode_is_a_usage_error(data_file):
    result = run("locomo", "--data", str(data_file), "--modes", "fts,bm25")
    assert result.exit_code == 2 and "'bm25' is not a mode" in result.stderr


def test_help_shows_examples():
    for command in ("locomo", "longmemeval", "synixbench", "report"):
        result = CliRunner().invoke(main, ["eval", command, "--help"])
        assert result.exit_code == 0 and f"synix eval {command}" in result.stdout


def test_report_shows_every_recorded_system_and_metric_in_markdown_html_and_json(data_file, tmp_path):
    assert baseline(data_file, tmp_path, "--modes", "fts,hybrid").exit_code == 0
    db = str(tmp_path / "results.db")
    md = run("report", "--results", db, "--html", str(tmp_path / "report.html"))
    assert md.exit_code == 0, md.output
    for needle in ("| locomo | raw-rag | fts |", "| locomo | raw-rag | hybrid |", "S@5", "T@10",
                   "p50 ms", "provenance", "by category"):
        assert needle in md.stdout
    page = (tmp_path / "report.html").read_text()
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) >= 3 and all(ET.fromstring(svg) is not None for svg in svgs)  # well-formed
    for needle in ("recall by k", "by category", "raw-rag (fts)", "raw-rag (hybrid)", "T@10"):
        assert needle in page
    out = json.loads(run("report", "--results", db, "--json").stdout)
    entry = out["results"]["locomo"]["raw-rag"]["hybrid"]
    assert {"session_recall@5", "turn_recall@10", "session_recall_all@10", "session_ndcg@10",
            "p50_ms"} <= set(entry)


def test_report_without_results_is_one_clean_error(tmp_path):
    result = run("report", "--results", str(tmp_path / "none.db"))
    assert result.exit_code == 1 and "no eval results" in result.stderr


def test_two_branches_and_raw_rag_are_evaluated_side_by_side_in_one_command(data_file, tmp_path, monkeypatch):
    from synix_assets.app.branches import create_branch
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project

    for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH", "SYNIX_BRANCH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    root = tmp_path / "proj"
    init_project(root, template="monthly")
    examples = __import__("synix_assets").__path__[0] + "/examples/topical.py"
    create_branch(ProjectPaths(root), "topical", pipeline_file=examples)
    result = run("locomo", "--data", str(data_file), "-p", str(root), "--branch", "main",
                 "--branch", "topical", "--baseline", "raw-rag", "--modes", "fts", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out["systems"]) == {"main", "topical", "raw-rag"}
    for system in ("main", "topical", "raw-rag"):
        metrics = out["systems"][system]["fts"]
        assert {"session_recall@5", "turn_recall@10", "p50_ms"} <= set(metrics)
        assert metrics["session_recall@1"] >= 1 / 3  # the kitten question is found by every system
    assert [r["branch"] for r in out["runs"]] == ["main", "topical"]
    assert "topics" in out["runs"][1]["builds"][0]["layers"]  # topical built with its own pipeline
    # the branch's scratch memory lives apart from main's
    assert (root / ".synix" / "eval" / "branches" / "topical" / "locomo").is_dir()
    # both runs are recorded: the report shows every branch and the baseline side by side
    md = run("report", "-p", str(root))
    assert md.exit_code == 0, md.output
    for system in ("main", "topical", "raw-rag"):
        assert f"| locomo | {system} | fts |" in md.stdout
    # text output prints the table and progress
    again = run("locomo", "--data", str(data_file), "-p", str(root), "--branch", "main",
                "--branch", "topical", "--modes", "fts")
    assert again.exit_code == 0, again.output
    assert "topical" in again.stdout and "main" in again.stdout
    assert "questions 6/6" in again.stderr


def test_unknown_branch_is_one_clean_error(data_file, tmp_path, monkeypatch):
    from synix_assets.app.init import init_project

    monkeypatch.delenv("SYNIX_PROJECT", raising=False)
    init_project(tmp_path / "proj", template="monthly")
    result = run("locomo", "--data", str(data_file), "-p", str(tmp_path / "proj"), "--branch", "nope")
    assert result.exit_code != 0
    assert "no branch 'nope'" in result.output and "Traceback" not in result.output
