"""Python ⇄ CLI parity (issue 29): every action of `synix.Pipeline` / `synix.PipelineBranch` is a
`synix` command of the same name, and the reverse; on the same project, `synix <cmd> --json` (a
real subprocess of the installed executable) prints the dict the Python result's `.to_json()`
returns.

Normalised, and only here: a build's `run_id` and `seconds` (two builds of two fresh copies never
share them). Everything else is compared as it is.
"""
from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import click
import pytest

import synix
from synix_assets.cli.main import main

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"
VOLATILE = ("run_id", "seconds")  # per build: never equal across two builds

# CLI command → (class, attribute) of the Python action it is.
CLI_TO_PYTHON = {
    "run": ("Pipeline", "run"),
    "plan": ("Pipeline", "plan"),
    "sync": ("Pipeline", "sync"),
    "pull": ("Pipeline", "pull"),
    "status": ("Pipeline", "status"),
    "stats": ("Pipeline", "stats"),
    "search": ("Pipeline", "search"),
    "get": ("Pipeline", "get"),
    "lineage": ("Pipeline", "lineage"),
    "runs": ("Pipeline", "runs"),
    "ask": ("Pipeline", "ask"),
    "purge": ("Pipeline", "purge"),
    "forget": ("Pipeline", "purge"),  # the older name of `synix purge`
    "gc": ("Pipeline", "gc"),
    "eval locomo": ("Pipeline", "eval"),  # pipeline.eval("locomo", data=…)
    "eval longmemeval": ("Pipeline", "eval"),  # pipeline.eval("longmemeval", data=…)
    "eval synixbench": ("Pipeline", "eval"),  # pipeline.eval("synixbench")
    "eval meme": ("Pipeline", "eval"),  # pipeline.eval("meme") (seed 7)
    "branch create": ("Pipeline", "branch"),
    "branch list": ("Pipeline", "branches"),
    "branch switch": ("PipelineBranch", "switch"),
    "branch diff": ("PipelineBranch", "diff"),
    "branch promote": ("PipelineBranch", "promote"),
    "branch delete": ("PipelineBranch", "delete"),
    # the branch's definition: the CLI prints its pipeline.py, Python loads what that file defines
    "branch edit": ("PipelineBranch", "pipeline"),
    # agent-written memories (Syke's tool names, issue 32)
    **{f"memory {name}": ("Pipeline", name) for name in (
        "create_memory", "update_memory", "supersede_memory", "deactivate_memory", "create_link",
        "get_memory", "get_memory_history", "follow_links", "cross_reference", "get_brief",
        "list_active_memories", "get_memex")},
    # the evidence ledger (design 003's L1, Syke's tool names)
    **{f"evidence {name}": ("Pipeline", name) for name in (
        "append_events", "search_evidence", "browse_timeline", "resolve_events", "sync_evidence")},
    "pack": ("Pipeline", "pack"),
}

# Commands that start or administer a process, or make a project; no Pipeline action is them.
CLI_ONLY = {
    "init": "creates a project folder; in Python the file that declares Pipeline(...) is the project",
    "demo": "a guided tour that makes its own project and prints a story; not an action on a pipeline",
    "serve": "a long-running HTTP server process, not an action returning a result",
    "mcp": "a long-running MCP server process (stdio/HTTP), not an action returning a result",
    "mcp config": "prints an agent host's config for starting that process (docs/hosts.md)",
    "ui": "starts Dagster's web UI process for the project",
    "worker": "a Celery worker process for scaled builds",
    "live status": "the tenants' home of live memories (docs/live.md), not one pipeline",
    "live drain": "the tenants' home of live memories (docs/live.md), not one pipeline",
    "tenant create": "administers the tenants' home (docs/live.md), not one pipeline",
    "tenant list": "administers the tenants' home (docs/live.md), not one pipeline",
    "tenant delete": "administers the tenants' home (docs/live.md), not one pipeline",
    "unpack": "makes a project folder from a packed file, as `init` makes one; Python then opens it",
    "eval report": "reads back earlier eval runs from the results database as a table or HTML; "
                   "each Python eval() returns its own EvalResult",
}

# Public attributes of the Python classes that are not actions, and why there is no command.
# (The questions the engine asks a spec, `spec.ENGINE_METHODS`, are not listed by dir(Pipeline).)
PYTHON_ONLY = {
    **{name: "declares the pipeline; the CLI reads the declaration from pipeline.py"
       for name in ("source", "merge", "transform", "aggregate", "fold", "agent_step", "window_fold", "open_loops", "identity_facts", "facts", "search_index",
                    "context_doc", "artifact", "output", "remove", "validate", "to_toml", "from_toml")},
    "load": "opens a project; the CLI's -p/--project",
    "project": "the folder of the project; the CLI's -p/--project",
    "name": "the branch's name; the CLI's --branch NAME",
}

# Python keyword → CLI option where the spellings differ (the rest: `--` + name with dashes).
RENAMED = {("eval", "baselines"): "--baseline", ("branch", "from_branch"): "--from"}
# Python keywords with no CLI option, and why.
NO_OPTION = {("purge", "cascade"): "the CLI always cascades; Python refuses cascade=False",
             ("eval", "conversations"): "only `eval locomo` has it (LongMemEval has no conversations)",
             ("eval", "progress"): "the CLI always shows the eval's progress on stderr (stdout keeps the report)",
             **{(write, "content"): "the older spelling of new_content, the command's NEW_CONTENT argument"
                for write in ("update_memory", "supersede_memory")}}


def synix_cli(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """The installed `synix` in a subprocess, offline (fake provider), no colour."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_DEBUG",
                        "SYNIX_BRANCH")}
    env.update(SYNIX_LLM_PROVIDER="fake", NO_COLOR="1", DAGSTER_HOME=str(cwd / ".dagster-home-unused"))
    proc = subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    if check:
        assert proc.returncode == 0, f"synix {' '.join(args)}: {proc.stderr}"
    return proc


def cli_json(project: Path, *args: str) -> dict:
    return json.loads(synix_cli(*args, "--json", cwd=project).stdout)


def as_json(data) -> object:
    """What `--json` makes of a value (tuples become lists, paths and dates strings)."""
    return json.loads(json.dumps(data, default=str))


def without_volatile(data: dict) -> dict:
    return {k: v for k, v in as_json(data).items() if k not in VOLATILE}


def fresh_project(base: Path, name: str = "mem") -> Path:
    base.mkdir(parents=True, exist_ok=True)
    synix_cli("init", name, "--demo", cwd=base)
    return base / name


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """One demo project built by `synix run`, with a branch `exp` whose core folds every 3
    months, built by `synix run --branch exp`."""
    project = fresh_project(tmp_path_factory.mktemp("parity"))
    synix_cli("run", cwd=project)
    synix_cli("branch", "create", "exp", cwd=project)
    branch_file = Path(cli_json(project, "branch", "edit", "exp")["pipeline"])
    text = branch_file.read_text(encoding="utf-8")
    assert "checkpoint_every=6" in text
    branch_file.write_text(text.replace("checkpoint_every=6", "checkpoint_every=3"), encoding="utf-8")
    synix_cli("run", "--branch", "exp", cwd=project)
    return project


# ---- the same names ------------------------------------------------------------------------


def _cli_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> dict[str, click.Command]:
    """Every command as click lists and loads it (the top level loads each on first use)."""
    ctx = click.Context(group)
    out: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            assert cmd.list_commands(ctx), f"synix {' '.join((*prefix, name))} has no subcommand"
            out.update(_cli_commands(cmd, (*prefix, name)))
            if cmd.invoke_without_command:  # `synix mcp` runs on its own, `synix mcp config` too
                out[" ".join((*prefix, name))] = cmd
        else:
            out[" ".join((*prefix, name))] = cmd
    return out


def _public(cls) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def test_every_cli_command_is_a_python_action_or_an_exempt_process_command():
    commands = _cli_commands(main)
    assert set(CLI_TO_PYTHON) | set(CLI_ONLY) == set(commands), (
        f"unmapped: {sorted(set(commands) - set(CLI_TO_PYTHON) - set(CLI_ONLY))}; "
        f"gone: {sorted((set(CLI_TO_PYTHON) | set(CLI_ONLY)) - set(commands))}")
    assert not set(CLI_TO_PYTHON) & set(CLI_ONLY)
    for name, (cls, attr) in CLI_TO_PYTHON.items():
        assert hasattr(getattr(synix, cls), attr), f"synix {name} → {cls}.{attr} does not exist"
        options = {o for p in commands[name].params for o in getattr(p, "opts", [])}
        assert "--json" in options, f"synix {name} has no --json"


def test_every_public_python_action_is_a_cli_command_of_the_same_name():
    mapped = {(cls, attr) for cls, attr in CLI_TO_PYTHON.values()}
    for cls in ("Pipeline", "PipelineBranch"):
        public = _public(getattr(synix, cls))
        missing = {a for a in public if a not in PYTHON_ONLY
                   and (cls, a) not in mapped and ("Pipeline", a) not in mapped}
        assert not missing, f"{cls} actions without a synix command: {sorted(missing)}"
        # an action's command is its own name (or `branch <name>` for a branch's own actions)
        for name, (c, attr) in CLI_TO_PYTHON.items():
            if c == cls and attr in public and attr not in ("branch", "branches", "pipeline", "eval"):
                assert name.split()[-1] in (attr, "forget"), (name, attr)
    assert not set(PYTHON_ONLY) - _public(synix.Pipeline) - _public(synix.PipelineBranch), \
        "an exemption names nothing"


def test_every_python_keyword_of_an_action_is_an_option_of_its_command():
    commands = _cli_commands(main)
    for name, (cls, attr) in CLI_TO_PYTHON.items():
        member = getattr(getattr(synix, cls), attr)
        if isinstance(member, property):
            continue
        options = {o for p in commands[name].params for o in getattr(p, "opts", [])}
        for param in inspect.signature(member).parameters.values():
            if param.kind is not param.KEYWORD_ONLY or (attr, param.name) in NO_OPTION:
                continue
            option = RENAMED.get((attr, param.name), "--" + param.name.rstrip("_").replace("_", "-"))
            if name in ("eval synixbench", "eval meme") and param.name in ("data", "limit", "modes", "baselines"):
                continue  # SynixBench and MEME generate their own questions: no data, modes or baselines
            assert option in options, f"{cls}.{attr}({param.name}=…) has no {option} on synix {name}"


# ---- the same results ----------------------------------------------------------------------


def test_plan_and_plan_full_give_the_same_report(tmp_path):
    project = fresh_project(tmp_path)
    pipeline = synix.open(project)
    assert pipeline.plan().to_json() == cli_json(project, "plan")
    full = cli_json(project, "plan", "--full")
    assert pipeline.plan(full=True).to_json() == full
    assert full["layers"]["episodes"]["stale"] == 24


def test_sync_first_and_second_give_the_same_report_on_two_fresh_copies(tmp_path):
    py_project, cli_project = fresh_project(tmp_path / "py"), fresh_project(tmp_path / "cli")
    pipeline = synix.open(py_project)
    # a sync records the definition it compared, so each side syncs its own copy, twice
    first = pipeline.sync().to_json()
    assert first == cli_json(cli_project, "sync")
    assert {c["change"] for c in first["changes"]} == {"added"}
    assert pipeline.sync().to_json() == cli_json(cli_project, "sync") == {**first, "changes": []}


def test_sync_prints_the_designs_report_with_the_cli_run_command(tmp_path):
    project = fresh_project(tmp_path)
    synix_cli("sync", cwd=project)
    source = project / "pipeline.py"
    source.write_text(source.read_text(encoding="utf-8").replace(
        "prompt=prompts.episode_summary", "prompt=prompts.episode_summary, temperature=0.9"), encoding="utf-8")
    out = synix_cli("sync", cwd=project).stdout
    assert out.splitlines()[0] == "Pipeline 'personal-memory' — changes detected:"
    assert re.search(r"^  CHANGED  episodes +\(model settings changed\) → will reprocess 24 records$", out, re.M)
    assert re.search(r"^  CHANGED  monthly +\(upstream changed\) → will reprocess 6 records$", out, re.M)
    assert "Estimated cost: $0.00" in out and out.rstrip().endswith("Run with: synix run")
    assert "pipeline.run()" not in out
    assert synix_cli("sync", cwd=project).stdout.strip() == "Pipeline 'personal-memory' — no changes."


def test_run_step_gives_the_same_build_report_on_two_fresh_copies(tmp_path):
    py_project, cli_project = fresh_project(tmp_path / "py"), fresh_project(tmp_path / "cli")
    py_report = synix.open(py_project).run("episodes").to_json()
    cli_report = cli_json(cli_project, "run", "episodes")
    assert set(py_report["layers"]) == {"transcripts", "episodes"}
    assert without_volatile(py_report) == without_volatile(cli_report)
    # again: all cached; --select is the older spelling of STEP
    again = without_volatile(synix.open(py_project).run("episodes").to_json())
    assert again == without_volatile(cli_json(cli_project, "run", "--select", "episodes"))
    assert again["layers"]["episodes"]["cached"] == 24 and again["llm_calls"] == 0


def test_run_step_and_select_naming_two_steps_is_one_usage_error(built):
    proc = synix_cli("run", "episodes", "--select", "monthly", cwd=built, check=False)
    assert proc.returncode == 2
    assert "Error: STEP 'episodes' and --select 'monthly' name different steps; give one" in proc.stderr


def test_stats_and_status_give_the_same_dicts(built):
    pipeline = synix.open(built)
    stats = cli_json(built, "stats")
    assert as_json(pipeline.stats()) == stats
    assert {s: v["records"] for s, v in stats["steps"].items()} == {
        "transcripts": 24, "episodes": 24, "monthly": 6, "core": 1}
    assert as_json(pipeline.status()) == cli_json(built, "status")
    table = synix_cli("stats", cwd=built).stdout
    assert "episodes" in table and "55 records in all" in table


def test_pull_gives_the_same_dict(built):
    # the demo reads exports only: nothing to pull (tests/live/test_api_source.py pulls for real)
    assert as_json(synix.open(built).pull()) == cli_json(built, "pull") == {"sources": [], "fetched": 0}


def test_search_step_gives_the_same_hits_as_the_older_layers_option(built):
    pipeline = synix.open(built)
    py = pipeline.search("sourdough", step="episodes").to_json()
    cli = cli_json(built, "search", "sourdough", "--step", "episodes")
    assert py == cli and cli["hits"] and {h["layer"] for h in cli["hits"]} == {"episodes"}
    assert set(cli["hits"][0]) == set(pipeline.search("sourdough", step="episodes")[0].data)  # nothing dropped
    assert cli_json(built, "search", "sourdough", "--layers", "episodes") == cli
    two = cli_json(built, "search", "sourdough", "--step", "episodes", "--step", "monthly")
    assert pipeline.search("sourdough", step=["episodes", "monthly"]).to_json() == two
    bad = synix_cli("search", "sourdough", "--step", "nosuch", cwd=built, check=False)
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "unknown layer 'nosuch'" in bad.stderr


def test_get_and_lineage_give_the_same_record(built):
    pipeline = synix.open(built)
    hit = pipeline.search("sourdough", step="episodes")[0]
    record, art = pipeline.get(hit.id), cli_json(built, "get", hit.id)
    assert (record.id, record.layer, record.group_key, record.content, record.level) == (
        art["artifact_id"], art["layer"], art["group_key"], art["content"], art["level"])
    assert as_json(record.metadata) == art["metadata"] and as_json(record.audit) == art["audit"]
    assert list(record.sources) == [p["artifact_id"] for p in art["parents"]]
    assert (record.materialization_key, record.run_id, record.created_at) == (
        art["materialization_key"], art["run_id"], art["created_at"])
    assert pipeline.lineage(hit.id).to_json() == cli_json(built, "lineage", hit.id)


def test_runs_give_the_same_list_and_the_same_run(built):
    pipeline = synix.open(built)
    listed = cli_json(built, "runs")
    assert as_json(pipeline.runs()) == listed["runs"]  # Python returns the list the CLI keys "runs"
    run_id = listed["runs"][0]["run_id"]
    assert as_json(pipeline.runs(run_id)) == cli_json(built, "runs", run_id)


def test_branch_diff_reports_changed_steps_alike(built):
    diff = synix.open(built).branch("exp").diff()
    cli = cli_json(built, "branch", "diff", "exp")
    assert diff.to_json() == cli
    assert diff.changed_steps == cli["changed_steps"] and "core" in cli["changed_steps"]
    assert "episodes" not in cli["changed_steps"]
    human = synix_cli("branch", "diff", "exp", cwd=built).stdout
    assert f"changed steps: {', '.join(cli['changed_steps'])}" in human


def test_branches_and_gc_dry_run_give_the_same_dicts(built):
    pipeline = synix.open(built)
    assert as_json(pipeline.branches()) == cli_json(built, "branch", "list")
    assert as_json(pipeline.gc(dry_run=True)) == cli_json(built, "gc", "--dry-run")


def test_purge_dry_run_of_a_source_record_lists_the_same_records_as_forget(built):
    pipeline = synix.open(built)
    leaf = pipeline.search("sourdough", step="episodes")[0].leaves()[0]
    py = pipeline.purge(leaf.id, dry_run=True)
    cli = cli_json(built, "purge", leaf.id, "--dry-run")
    assert py.to_json() == cli
    assert leaf.id in py.affected_records and len(py.affected_records) > 1
    assert cli_json(built, "forget", leaf.id, "--dry-run") == cli
    assert synix.open(built).stats()["records"] == 55  # a dry run deletes nothing
    empty = synix_cli("purge", "", cwd=built, check=False)
    assert empty.returncode == 2 and "the target is empty" in empty.stderr


def test_forget_help_names_purge_as_its_new_name():
    proc = synix_cli("forget", "--help", cwd=Path.cwd())
    assert "The older name of `synix purge`" in proc.stdout
    listing = synix_cli("--help", cwd=Path.cwd()).stdout
    assert "purge" in listing and "stats" in listing and "sync" in listing


def test_ask_offline_gives_the_same_answer(built):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = synix.open(built).ask("what about sourdough?", offline=True)
    assert as_json(py) == cli_json(built, "ask", "what about sourdough?", "--offline")


def test_evidence_commands_give_the_same_answers(built, tmp_path):
    pipeline = synix.open(built)
    event = {"source": "github", "event_type": "commit", "content": "Sourdough starter tracker v2",
             "timestamp": "2025-06-01T08:00:00Z"}
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(event) + "\n", encoding="utf-8")
    first = cli_json(built, "evidence", "append_events", str(events))
    assert first["appended"] == 1
    assert pipeline.append_events([event]) == {**first, "appended": 0, "existing": 1}
    assert pipeline.search_evidence("sourdough", limit=3, source="github") == \
        cli_json(built, "evidence", "search_evidence", "sourdough", "--limit", "3", "--source", "github")
    assert pipeline.browse_timeline(since="2025-06-01", limit=5) == \
        cli_json(built, "evidence", "browse_timeline", "--since", "2025-06-01", "--limit", "5")
    ids = [*first["ids"], "ev-000000000000000000000000"]
    assert pipeline.resolve_events(ids) == json.loads(
        synix_cli("evidence", "resolve_events", *ids, "--json", cwd=built, check=False).stdout)
    assert pipeline.sync_evidence() == cli_json(built, "evidence", "sync_evidence")


def test_pack_gives_the_same_report(built, tmp_path):
    py = synix.open(built).pack(tmp_path / "py.db")
    cli = cli_json(built, "pack", str(tmp_path / "cli.db"))
    assert {**py, "path": None} == {**cli, "path": None} and py["files"] > 5
