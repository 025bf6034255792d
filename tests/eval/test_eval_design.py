"""What a researcher needs from a run: the core-only baseline, the design's metric names
(000 §9.5) next to ours, a measured incremental speedup, and every run traceable to the Synix
builds (and stores) of the memory it measured — in results.db, the report and the CLI."""
from __future__ import annotations

import json
import sqlite3

import httpx2
import pytest
from click.testing import CliRunner
from test_pipeline_eval import FakeAnthropic

from synix_assets.cli.main import main
from synix_assets.eval import report
from synix_assets.eval.data import load_locomo
from synix_assets.eval.results import MIGRATIONS, ResultsStore, results_path
from synix_assets.eval.runner import EvalSettings, run_eval
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project

SETTINGS = EvalSettings(modes=("fts",), systems=("memory", "raw-rag"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from eval_fixtures import LOCOMO_TINY

    with pytest.MonkeyPatch.context() as mp:
        for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH"):
            mp.delenv(var, raising=False)
        mp.setenv("SYNIX_LLM_PROVIDER", "extractive")
        root = tmp_path_factory.mktemp("design")
        data = root / "locomo-tiny.json"
        data.write_text(json.dumps([LOCOMO_TINY]))
        init_project(root / "main", template="monthly")
        project = ProjectPaths(root / "main")
        result = run_eval(load_locomo(data), project=project, branch="main", settings=SETTINGS,
                          results_db=results_path(project.state_dir))
        yield project, data, result


@pytest.fixture(autouse=True)
def _extractive(monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")


def test_design_metric_names_stand_next_to_ours_with_the_same_figures(built):
    _, _, result = built
    for system in ("memory", "raw-rag"):
        m = result["systems"][system]["fts"]
        assert m["precision@5"] == m["session_recall@5"]
        assert m["memory_freshness"] == m["freshness"]
        assert m["provenance_completeness"] == m["provenance_complete"] == 1.0
        # LoCoMo's temporal category is "2" (one question in the fixture); offline: its S@5
        assert m["temporal_questions"] == 1 and m["temporal_accuracy_basis"] == "session_recall@5"
        assert m["temporal_accuracy"] == m["by_category"]["2"]["session_recall@5"]


def test_incremental_speedup_is_a_timed_second_build_with_nothing_changed(built):
    project, _, result = built
    inc = result["run"]["incremental"]
    assert inc["case"] == "conv-t" and inc["first_build_s"] > 0 and inc["rebuild_s"] > 0
    assert not inc["first_noop"] and inc["first_llm_calls"] > 0  # the first build built everything
    assert inc["rebuild_noop"] and inc["rebuild_llm_calls"] == 0
    assert inc["speedup"] == round(inc["rebuild_s"] / inc["first_build_s"], 4) < 1
    assert result["run"]["incremental_speedup"] == inc["speedup"]
    rows = report.rows_of([result])
    assert next(r for r in rows if r["system"] == "main")["incremental_speedup"] == inc["speedup"]
    assert next(r for r in rows if r["system"] == "raw-rag")["incremental_speedup"] is None


def test_every_run_is_stamped_with_the_synix_builds_it_measured(built):
    project, data, result = built
    run = result["run"]
    assert run["branch"] == "main" and run["pipeline_version"]
    build = run["builds"][0]
    assert run["build_run_ids"] == [build["run_id"]] == [build["built_by"]]  # a real build: its own run
    store = project.state_dir / "eval" / "locomo" / "conv-t" / ".synix" / "synix.db"
    assert build["store"] == str(store)
    with sqlite3.connect(store) as conn:  # the id names a completed run of that store
        assert conn.execute("SELECT status FROM runs WHERE run_id = ?", (build["run_id"],)).fetchone() == \
            ("completed",)
    with sqlite3.connect(results_path(project.state_dir)) as conn:
        ids, stores = conn.execute("SELECT build_run_ids, stores FROM runs WHERE id = ?",
                                   (run["run_id"],)).fetchone()
    assert json.loads(ids) == run["build_run_ids"] and json.loads(stores) == [str(store)]
    # an unchanged re-run builds nothing: it names the run that built the memory it measured
    again = run_eval(load_locomo(data), project=project, branch="main", settings=SETTINGS,
                     results_db=results_path(project.state_dir))
    assert again["run"]["builds"][0]["noop"] and again["run"]["build_run_ids"] == run["build_run_ids"]
    out = CliRunner().invoke(main, ["eval", "report", "-p", str(project.root)])
    assert out.exit_code == 0, out.output
    assert "## Runs: the memory each number measured" in out.stdout
    assert f"| {again['run']['run_id']} |" in out.stdout and run["build_run_ids"][0] in out.stdout
    assert run["pipeline_version"] in out.stdout and str(store) in out.stdout
    assert "precision@5 (= S@5) [> 0.80]" in out.stdout and "incremental speedup [< 0.1x]" in out.stdout
    js = json.loads(CliRunner().invoke(main, ["eval", "report", "-p", str(project.root), "--json"]).stdout)
    main_row = js["results"]["locomo"]["main"]["fts"]
    assert main_row["build_run_ids"] == run["build_run_ids"] and main_row["pipeline_version"] == run["pipeline_version"]
    assert {"precision@5", "temporal_accuracy", "memory_freshness", "provenance_completeness",
            "incremental_speedup"} <= set(main_row)
    page = report.html_report(ResultsStore(results_path(project.state_dir)).latest())
    assert "Design metrics" in page and run["build_run_ids"][0] in page


def test_core_only_answers_from_the_context_document_alone(built):
    project, data, _ = built
    api = FakeAnthropic()
    settings = EvalSettings(modes=("fts",), systems=("memory", "core-only"), qa=True, qa_mode="fts", qa_options={
        "provider": "anthropic", "api_key": "sk-ant-test", "env": {},
        "http_client": httpx2.Client(transport=httpx2.MockTransport(api))})
    result = run_eval(load_locomo(data), project=project, branch="main", settings=settings)
    core = result["systems"]["core-only"]["core"]
    assert core["questions"] == 5 and core["qa_accuracy"] is not None and core["session_recall@5"] is None
    context = (project.state_dir / "eval" / "locomo" / "conv-t" / "context.md").read_text()
    prompts = [b["messages"][0]["content"] for b in api.sent if "Memory excerpts" in b["messages"][0]["content"]]
    core_prompts = [p for p in prompts if "(nothing found)" in p]
    assert len(core_prompts) == 5  # nothing retrieved: the context document is all it reads
    assert all(context.strip()[:200] in p for p in core_prompts)
    # with QA, temporal accuracy is the QA accuracy on the temporal category
    m = result["systems"]["memory"]["fts"]
    assert m["temporal_accuracy_basis"] == "qa_accuracy"
    assert m["temporal_accuracy"] == m["by_category"]["2"]["qa_accuracy"]
    assert report.rows_of([result])[-1]["system"] == "core-only (main)"


def test_core_only_without_a_model_is_one_clean_error(built, tmp_path):
    project, data, _ = built
    out = CliRunner().invoke(main, ["eval", "locomo", "--data", str(data), "-p", str(project.root),
                                    "--baseline", "core-only", "--modes", "fts", "--results",
                                    str(tmp_path / "r.db")])
    assert out.exit_code == 1 and "Traceback" not in out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "core-only baseline answers from the pipeline's context document alone, " \
                                "so it needs a model" in lines[0]
    assert not (tmp_path / "r.db").exists()


def test_results_file_from_before_the_stamps_is_migrated_and_still_reported(tmp_path):
    path = tmp_path / "results.db"
    with sqlite3.connect(path) as conn:  # the schema as it was before the migrations
        conn.executescript("""
            CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
                benchmark TEXT NOT NULL, variant TEXT NOT NULL DEFAULT '', branch TEXT NOT NULL,
                pipeline_version TEXT, data_file TEXT NOT NULL, data_hash TEXT NOT NULL,
                settings TEXT NOT NULL, run TEXT NOT NULL, summary TEXT NOT NULL);
            CREATE TABLE questions (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                question_id TEXT NOT NULL, case_id TEXT NOT NULL, category TEXT NOT NULL,
                system TEXT NOT NULL, mode TEXT NOT NULL, result TEXT NOT NULL,
                PRIMARY KEY (run_id, question_id, system, mode));""")
        conn.execute("INSERT INTO runs(created_at, benchmark, branch, data_file, data_hash, settings, run, summary) "
                     "VALUES ('2026-01-01T00:00:00Z', 'locomo', 'main', 'f.json', 'h', '{}', ?, ?)",
                     (json.dumps({"benchmark": "locomo", "branch": "main", "data_hash": "h", "data_file": "f.json",
                                  "pipeline_version": "abc"}),
                      json.dumps({"memory": {"fts": {"questions": 1, "session_recall@5": 1.0}}})))
    with ResultsStore(path) as store:
        applied = [r[0] for r in store.conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert applied == MIGRATIONS.names == ["m001_runs_and_questions", "m002_build_stamps"]
        old = store.latest()
    assert old[0]["run"]["build_run_ids"] == []
    md = report.markdown(old)
    assert "| locomo | main | fts |" in md and "| 1 | 2026-01-01T00:00:00Z | locomo | main | abc | – | – |" in md
    with ResultsStore(path) as store:  # opening again applies nothing twice
        assert store.conn.execute("SELECT count(*) FROM _migrations").fetchone() == (2,)
