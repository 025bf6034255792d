"""Every `synix` command through click's CliRunner: output, --json schemas and clean errors.

One demo project is built once for the module (a Dagster build costs seconds); tests that
change a project make their own.
"""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_assets.cli.main import main

COMMANDS = ("init", "run", "plan", "status", "search", "lineage", "get", "runs", "ui", "demo")


def invoke(*args, cwd: Path | None = None, env: dict | None = None):
    runner = CliRunner()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), env=env, catch_exceptions=True)
    finally:
        os.chdir(old)


def as_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def clean_error(result, *needles: str, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.stderr.split())
    assert text.startswith("error:"), result.output
    for needle in needles:
        assert needle in text, text
    return text


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A demo project built once: (root, first run's --json)."""
    base = tmp_path_factory.mktemp("built")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYNIX_LLM_PROVIDER", "extractive")
        mp.setenv("DAGSTER_HOME", str(base / "unused_dagster_home"))
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        assert invoke("init", str(base / "mem"), "--demo").exit_code == 0
        first = invoke("run", "--json", cwd=base / "mem")
        assert first.exit_code == 0, first.output
        yield base / "mem", json.loads(first.stdout)


@pytest.fixture(autouse=True)
def _extractive(monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")


# ---- help ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.output
    assert "-p, --project" in result.output or command in ("init", "demo")


def test_cli_import_does_not_load_dagster():
    code = "import sys, synix_assets.cli.main; print('dagster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"



def test_a_no_op_run_loads_neither_dagster_nor_the_other_commands(built):
    """A run with nothing to do answers from the store and the exports: Dagster, SQLAlchemy,
    sqlite_utils (and its numpy), the server and the other commands stay unloaded."""
    root, _ = built
    code = ("import sys\nfrom synix_assets.cli.main import main\n"
            "try:\n    main(['run', '--json'], standalone_mode=False)\n"
            "finally:\n    print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('dagster', 'sqlalchemy', 'sqlite_utils', 'numpy', 'fastapi', 'mcp') or m in "
            "('synix_assets.cli.serve_cmd', 'synix_assets.cli.branch_cmd', 'synix_assets.cli.eval_cmd',"
            " 'synix_assets.cli.live_cmd', 'synix_assets.cli.read_cmds')), file=sys.stderr)\n")
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "extractive"}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout)["llm_calls"] == 0
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr[-2000:]

# ---- init / run / plan --------------------------------------------------------------------

def test_run_json_schema_and_counts(built):
    _, first = built
    assert set(first) >= {"run_id", "layers", "llm_calls", "tokens_in", "tokens_out", "cost_usd", "seconds"}
    assert first["layers"] == {"transcripts": {"built": 24, "from_response_cache": 0, "cached": 0, "failed": 0},
                               "episodes": {"built": 24, "from_response_cache": 0, "cached": 0, "failed": 0},
                               "monthly": {"built": 6, "from_response_cache": 0, "cached": 0, "failed": 0},
                               "core": {"built": 1, "from_response_cache": 0, "cached": 0, "failed": 0}}
    assert first["llm_calls"] == 36 and first["cost_usd"] == 0


def test_second_run_is_a_noop_and_says_so(built):
    root, _ = built
    result = invoke("run", cwd=root)
    assert result.exit_code == 0, result.output
    assert "Nothing changed" in result.stdout
    assert "extractive = offline sentence selection, not an LLM" in " ".join(result.stdout.split())
    assert "\x1b[" not in result.stdout  # not a TTY: no colour, no bars


def test_plan_json_on_a_built_project_has_nothing_to_do(built):
    root, _ = built
    plan = as_json(invoke("plan", "--json", cwd=root))
    assert plan["nothing_to_do"] is True and plan["llm_calls"] == 0
    assert {l: v["cached"] for l, v in plan["layers"].items()} == \
        {"transcripts": 24, "episodes": 24, "monthly": 6, "core": 1}


def test_plan_on_a_fresh_project_estimates_cost_with_the_price_table(tmp_path, monkeypatch):
    assert invoke("init", str(tmp_path / "p"), "--demo").exit_code == 0
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "anthropic")  # no key: a plan sends nothing
    monkeypatch.setenv("SYNIX_LLM_MODEL", "claude-haiku-4-5")
    plan = as_json(invoke("plan", "--json", cwd=tmp_path / "p"))
    assert plan["provider"] == "anthropic" and plan["llm_calls"] == 36
    assert plan["layers"]["episodes"]["reasons"] == {"new": 24}
    assert plan["layers"]["episodes"]["tokens_in"] > 24 * 250
    assert 0 < plan["cost_usd"] < 1
    text = invoke("plan", cwd=tmp_path / "p").stdout
    assert "Plan for personal-memory" in text and "Run it with: synix run" in text


def test_init_refuses_to_overwrite_and_takes_exports(tmp_path):
    export = Path(__file__).resolve().parents[2] / "synix_assets" / "demo" / "claude_demo.json"
    result = invoke("init", str(tmp_path / "m"), "--from", str(export), "--template", "topical")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "m" / "exports" / "claude_demo.json").exists()
    assert "topics" in (tmp_path / "m" / "pipeline.py").read_text()
    clean_error(invoke("init", str(tmp_path / "m")), "already exists", "--force")
    assert invoke("init", str(tmp_path / "m"), "--force").exit_code == 0


# ---- read commands ------------------------------------------------------------------------

def test_status_json(built):
    root, _ = built
    status = as_json(invoke("status", "--json", cwd=root))
    assert status["layers"]["episodes"]["artifacts"] == 24 and status["layers"]["episodes"]["stale"] == 0
    assert status["layers"]["core"]["cache_hit_ratio"] == 0.0  # the last real run built everything
    assert status["projections"]["context"]["path"] == str(root / "context.md")
    assert status["projections"]["memory-index"]["stale"] is False
    assert "Status of personal-memory" in invoke("status", cwd=root).stdout


def test_search_json_schema(built):
    root, _ = built
    data = as_json(invoke("search", "marathon", "--json", cwd=root))
    assert data["hits"]
    for hit in data["hits"]:
        assert {"artifact_id", "layer", "level", "score", "snippet", "provenance", "sources"} <= set(hit)
        assert hit["provenance"] and all(p.startswith("transcripts-") for p in hit["provenance"])
        assert {"conversation_id", "title", "date"} <= set(hit["sources"][0])


@pytest.mark.parametrize("option, value, says", [
    ("--since", "2023-13-01", "there is no month 13"),
    ("--until", "2024-02-30", "February 2024 has no day 30"),
])
def test_search_with_a_date_not_on_the_calendar_is_one_error_line(built, option, value, says):
    root, _ = built
    result = invoke("search", "marathon", option, value, cwd=root)
    line = clean_error(result, f"{option} '{value}' is not a real date ({says})")
    assert len(result.stderr.strip().splitlines()) == 1 and "No results" not in result.output, line


def test_search_with_a_bad_date_is_refused_before_the_index_is_needed(tmp_path):
    assert invoke("init", str(tmp_path / "empty")).exit_code == 0
    clean_error(invoke("search", "x", "--since", "2023-13-01", cwd=tmp_path / "empty"), "there is no month 13")


def test_search_scoped_text_shows_panels_with_provenance(built):
    root, _ = built
    result = invoke("search", "marathon", "--layers", "episodes", "--limit", "2", cwd=root)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("episodes (level 1)") == 2
    assert "provenance" in result.stdout and "transcripts-" in result.stdout and "messages 1" in result.stdout
    data = as_json(invoke("search", "marathon", "--layers", "episodes,monthly", "--json", cwd=root))
    assert {h["layer"] for h in data["hits"]} <= {"episodes", "monthly"}


def test_search_leaves_ranks_the_transcripts_message_by_message_below_the_summaries(built):
    root, _ = built
    summaries = as_json(invoke("search", "marathon", "--json", cwd=root))["hits"]
    assert any(h["level"] > 0 for h in summaries)  # without --leaves the summaries answer
    data = as_json(invoke("search", "marathon", "--leaves", "--limit", "3", "--json", cwd=root))
    assert data["hits"] and len(data["hits"]) <= 3
    for hit in data["hits"]:
        assert hit["level"] == 0 and hit["layer"] == "transcripts"
        first, last = hit["message_range"]
        assert first == last and hit["sources"][0]["message_range"] == [first, last]
    assert "[marathon]" in data["hits"][0]["snippet"].lower()


def test_semantic_search_without_embeddings_falls_back_with_a_notice(built):
    root, _ = built
    data = as_json(invoke("search", "marathon", "--mode", "semantic", "--json", cwd=root))
    assert data["hits"] and data["mode"] == "fts" and "full-text" in data["notice"]
    assert "note:" in invoke("search", "marathon", "--mode", "hybrid", cwd=root).stdout


def test_search_unknown_layer_and_empty_query(built):
    root, _ = built
    clean_error(invoke("search", "marathon", "--layers", "nope", cwd=root), "unknown layer 'nope'")
    clean_error(invoke("search", "  ", cwd=root), "empty")


def test_lineage_reaches_source_messages(built):
    root, _ = built
    core = as_json(invoke("search", "marathon", "--layers", "core", "--json", cwd=root))["hits"][0]
    tree = as_json(invoke("lineage", core["artifact_id"], "--json", cwd=root))
    leaves = []

    def walk(node):
        if not node["parents"]:
            leaves.append(node)
        for p in node["parents"]:
            walk(p)
    walk(tree)
    assert len(leaves) == 24 and all(l["source"]["title"] and l["source"]["message_range"] for l in leaves)
    text = invoke("lineage", core["artifact_id"][:12], cwd=root).stdout
    assert "monthly 2025-01" in text and "messages 1–" in text


def test_get_by_prefix_shows_audit_and_parents(built):
    root, _ = built
    hit = as_json(invoke("search", "marathon", "--layers", "episodes", "--json", cwd=root))["hits"][0]
    art = as_json(invoke("get", hit["artifact_id"].split("-")[-1][:8], "--json", cwd=root))
    assert art["artifact_id"] == hit["artifact_id"] and art["content"]
    assert art["audit"]["provider"] == "extractive"
    assert art["parents"][0]["layer"] == "transcripts"
    text = invoke("get", hit["artifact_id"], cwd=root).stdout
    assert "llm" in text and "extractive" in text and "parent" in text
    clean_error(invoke("get", "episodes-doesnotexist", cwd=root), "No artifact")


def test_runs_list_and_detail(built):
    root, first = built
    runs = as_json(invoke("runs", "--json", cwd=root))["runs"]
    assert runs[0]["run_id"] == first["run_id"] and runs[0]["built"] == 55
    one = as_json(invoke("runs", first["run_id"][:10], "--json", cwd=root))
    assert one["layers"]["episodes"]["built"] == 24
    assert first["run_id"][:12] in invoke("runs", cwd=root).stdout
    clean_error(invoke("runs", "ffffffffffff", cwd=root), "no run")


def test_run_detail_in_text_mode_prints_its_layers_and_exits_zero(built):
    root, first = built
    result = invoke("runs", first["run_id"][:10], cwd=root)
    assert result.exit_code == 0, result.output
    assert f"run {first['run_id']}" in result.stdout and "episodes" in result.stdout


def test_run_detail_in_text_mode_lists_each_failed_partition():
    from rich.console import Console

    from synix_assets.cli.render import run_details
    out = Console(record=True, width=200)
    run_details(out, {"run_id": "r1", "status": "failed", "started_at": "2026-01-01T00:00:00",
                      "finished_at": None, "layers": {"episodes": {"built": 1, "failed": 1}},
                      "failures": [{"layer": "episodes", "partition": "c-7", "error": "the prompt raised"}]})
    assert "failed episodes/c-7: the prompt raised" in out.export_text()


def test_project_option_on_group_and_command(built, tmp_path):
    root, _ = built
    a = as_json(invoke("-p", str(root), "status", "--json", cwd=tmp_path))
    b = as_json(invoke("status", "-p", str(root), "--json", cwd=tmp_path))
    assert a["layers"] == b["layers"]


def test_ui_starts_dagster_dev_for_the_project(built, monkeypatch):
    root, _ = built
    seen = {}

    def fake_run(cmd, env, cwd, *, host, port, upstream_port, allowed_hosts, on_started):
        seen.update(cmd=cmd, cwd=cwd, env=env, host=host, port=port, upstream=upstream_port)
        return 0

    monkeypatch.setattr("synix_assets.web.ui_server.run_guarded_ui", fake_run)
    result = invoke("ui", "--port", "3123", "--no-open", cwd=root)
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:3123" in result.stdout
    assert seen["cmd"][1:4] == ["-m", "dagster", "dev"]
    assert str(root / "workspace.yaml") in seen["cmd"] and "127.0.0.1" in seen["cmd"]
    # Dagster listens on an internal port; the guarded proxy takes the user's.
    assert (seen["host"], seen["port"]) == ("127.0.0.1", 3123)
    assert str(seen["upstream"]) in seen["cmd"] and seen["upstream"] != 3123
    assert seen["env"]["DAGSTER_HOME"] == str(root / ".synix" / "dagster")


# ---- errors -------------------------------------------------------------------------------

def test_no_pipeline_file(tmp_path):
    clean_error(invoke("status", cwd=tmp_path), "no pipeline.py", "synix init")


def test_syntax_error_names_file_and_line(tmp_path):
    assert invoke("init", str(tmp_path / "p"), "--demo").exit_code == 0
    pipeline = tmp_path / "p" / "pipeline.py"
    pipeline.write_text(pipeline.read_text() + "\npipeline.transform(\n", encoding="utf-8")
    text = clean_error(invoke("run", cwd=tmp_path / "p"), "pipeline.py:", "syntax error")
    assert str(pipeline) in text


def test_no_exports(tmp_path):
    assert invoke("init", str(tmp_path / "p")).exit_code == 0
    clean_error(invoke("run", cwd=tmp_path / "p"), "no export files", "synix init")


def test_unknown_layer(built):
    root, _ = built
    clean_error(invoke("run", "--select", "nope", cwd=root), "unknown layer 'nope'", "episodes")


def test_search_before_any_build(tmp_path):
    assert invoke("init", str(tmp_path / "p"), "--demo").exit_code == 0
    clean_error(invoke("search", "marathon", cwd=tmp_path / "p"), "no search index", "synix run")
    clean_error(invoke("get", "episodes-123456", cwd=tmp_path / "p"), "nothing has been built", "synix run")


def test_missing_anthropic_key(tmp_path, monkeypatch):
    assert invoke("init", str(tmp_path / "p"), "--demo").exit_code == 0
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "anthropic")
    clean_error(invoke("run", cwd=tmp_path / "p"), "no API key", "ANTHROPIC_API_KEY")


def test_locked_store(tmp_path, monkeypatch):
    assert invoke("init", str(tmp_path / "p"), "--demo").exit_code == 0
    monkeypatch.setenv("SYNIX_LOCK_TIMEOUT_S", "0.3")
    lock = tmp_path / "p" / ".synix" / "build.lock"
    with open(lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another build would
        clean_error(invoke("run", cwd=tmp_path / "p"), "another Synix build holds", "wait")


def test_bad_export_at_init(tmp_path):
    bad = tmp_path / "conversations.json"
    bad.write_text("this is not json", encoding="utf-8")
    clean_error(invoke("init", str(tmp_path / "p"), "--from", str(bad)), "conversations.json")
    clean_error(invoke("init", str(tmp_path / "q"), "--from", str(tmp_path / "missing.json")), "does not exist")


def test_bad_export_at_run(tmp_path):
    assert invoke("init", str(tmp_path / "p")).exit_code == 0
    (tmp_path / "p" / "exports" / "broken.json").write_text('{"truncated": [', encoding="utf-8")
    result = invoke("run", cwd=tmp_path / "p")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "broken.json" in result.stderr and "could not be read" in result.stderr


def test_failed_partitions_are_listed_with_exit_code_1(tmp_path, monkeypatch):
    export = Path(__file__).resolve().parents[2] / "synix_assets" / "demo" / "claude_demo.json"
    assert invoke("init", str(tmp_path / "p"), "--from", str(export)).exit_code == 0
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    pipeline = tmp_path / "p" / "pipeline.py"  # the fake provider answers this marker with a 400
    pipeline.write_text(pipeline.read_text().replace(
        "prompt=prompts.episode_summary", 'prompt=lambda r: "SYNIX_FAIL_400 " + r.content'))
    result = invoke("run", "--json", cwd=tmp_path / "p")
    assert result.exit_code == 1 and "Traceback" not in result.output
    report = json.loads(result.stdout)
    assert report["layers"]["episodes"]["failed"] == 10 and report["layers"]["transcripts"]["built"] == 10
    assert result.stderr.count("failed episodes/") == 10
    assert "partition(s) failed" in result.stderr


def test_internal_error_is_one_line_and_debug_shows_it(built, monkeypatch):
    root, _ = built

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr("synix_assets.app.status.project_status", boom)
    text = clean_error(invoke("status", cwd=root), "internal error: RuntimeError: boom", "--debug", code=70)
    assert len(text.splitlines()) == 1
    result = invoke("--debug", "status", cwd=root)
    assert isinstance(result.exception, RuntimeError)


def test_usage_errors_are_clicks(built):
    root, _ = built
    result = invoke("search", "x", "--mode", "nope", cwd=root)
    assert result.exit_code == 2 and "Invalid value" in result.stderr
