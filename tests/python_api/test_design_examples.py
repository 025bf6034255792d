"""The design's own Python examples (000 §4.2–§4.9, §8.2–§8.4, §11.3), read from the design document
and run as written in a real subprocess with the offline extractive summariser: only the export
paths, the prompt bodies the design leaves out and the record-id placeholders are filled in.
Each test asserts what the design says the block prints or returns."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.python_api.design_blocks import (CHATGPT, CLAUDE, EXPORTS, REPO, block, run_script,
                                            small_locomo)

pytestmark = [pytest.mark.slow, pytest.mark.corpus]

# The prompt the design names but never writes, and the two improved ones of §4.5 and §8.4.
MISSING_PROMPTS = '''
import synix
from synix import Pipeline, Record


def extract_transcript(record: Record) -> str:
    return f"Write this conversation out as a clean transcript, one line per turn.\\n\\n{record.content}"


def improved_summarize(record: Record) -> str:
    return f"Summarize this conversation in one sentence naming its topic.\\n\\n{record.content}"


def detailed_summary(record: Record) -> str:
    return f"Summarize this conversation in detail: every decision and open question.\\n\\n{record.content}"
'''


def prompts() -> str:
    """The missing prompts, then §4.3.2's three prompt functions as written."""
    return MISSING_PROMPTS + "\n" + block("#### 4.3.2 Prompt Signatures")


def pipeline_42() -> str:
    return block("### 4.2 Pipeline Definition", fill=EXPORTS)


def pipeline_82() -> str:
    return block("### 8.2 Pipeline Definition", fill={"~/exports/chatgpt.json": str(CHATGPT)})


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def opened(folder: Path):
    import synix

    return synix.open(folder)


def built_counts(folder: Path) -> dict[str, int]:
    return {step: s["records"] for step, s in opened(folder).stats()["steps"].items()}


def test_design_blocks_are_read_from_the_design_document():
    code = pipeline_42()
    assert 'pipeline = Pipeline("personal-memory", agent="mark")' in code
    assert str(CHATGPT) in code and str(CLAUDE) in code
    assert 'surface="search"' in code and 'validate=None' in code


def test_4_2_pipeline_runs_the_4_4_2_variants_and_4_4_1_sync_reports_a_prompt_edit(tmp_path):
    out = ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + block("#### 4.4.2 Run Commands")))
    # §4.4.2 echoes each run's summary (§8.3's lines), then the plan's steps and estimates
    runs = re.findall(r"Records: ([\d,]+) created", out)
    assert len(runs) == 4, out
    first, step_only, from_transcripts, full = (int(n.replace(",", "")) for n in runs)
    counts = built_counts(tmp_path)
    assert set(counts) == {"unified", "transcripts", "summaries", "monthly", "world-model"}
    assert counts["unified"] == counts["transcripts"] == counts["summaries"] > 150  # 192 + 13 conversations, some empty
    assert first == sum(counts.values())
    assert step_only == 0 and from_transcripts == 0  # nothing changed: every key already exists
    assert full == sum(counts.values())  # full=True ignores the materialization keys
    assert "['chatgpt', 'claude']" in out  # plan.steps: only the sources are read, nothing to execute
    assert "{'tokens': 0, 'cost': 0.0}" in out

    # the user edits summarize_conversation; §4.4.1's sync shows what that changes
    edited = prompts().replace("Summarize this conversation in 2-3 sentences.",
                               "Summarize this conversation in 3-4 sentences.")
    assert edited != prompts()
    out = ok(run_script(tmp_path, "memory.py", edited + pipeline_42() + block("#### 4.4.1 Pipeline Sync")))
    assert "Pipeline 'personal-memory' — changes detected:" in out
    summaries = counts["summaries"]
    assert re.search(rf"CHANGED\s+summaries\s+\(prompt hash changed\) → will reprocess {summaries} records", out), out
    months = counts["monthly"]
    assert re.search(rf"CHANGED\s+monthly\s+\(upstream changed\) → will reprocess {months} records", out), out
    assert re.search(r"CHANGED\s+world-model\s+\(upstream changed\) → will reprocess 1 record\b", out), out
    assert not re.search(r"CHANGED\s+(transcripts|unified)\b", out)
    assert "Estimated cost: $0.00" in out and "Run with: pipeline.run()" in out


def test_4_3_1_an_explicit_prompt_version_is_the_prompts_identity(tmp_path):
    pinned = block("#### 4.3.1 Prompt Identity and Versioning", 1, fill={
        "    ...\n": '    return f"Summarize this conversation.\\n\\n{record.content}"\n'})
    rest = prompts().replace("def summarize_conversation(", "def _unused_summary(")
    ok(run_script(tmp_path, "memory.py", rest + pinned + pipeline_42() + "pipeline.run()\n"))
    # the body changes, the version does not: nothing to reprocess
    reworded = pinned.replace("Summarize this conversation.", "Summarise this conversation, briefly.")
    out = ok(run_script(tmp_path, "memory.py", rest + reworded + pipeline_42() + "pipeline.sync()\n"))
    assert "no changes" in out, out
    bumped = reworded.replace('version="2026-02-05"', 'version="2026-02-06"')
    out = ok(run_script(tmp_path, "memory.py", rest + bumped + pipeline_42() + "pipeline.sync()\n"))
    assert re.search(r"CHANGED\s+summaries\s+\(prompt hash changed\)", out), out


def test_4_6_search_drill_down_leaf_search_and_lineage(tmp_path):
    ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + "pipeline.run()\n"))
    memory = opened(tmp_path)
    rust = memory.search("Rust")
    assert rust, "the export mentions Rust"
    record_id = rust[0].id
    code = block("### 4.6 Querying", fill={'"record-uuid"': repr(record_id)})
    code += ("\nprint('SCOPED', [h.step for h in pipeline.search('Rust', step='monthly')])"
             "\nprint('RAW', [(h.step, h.id) for h in raw])\nprint('LINEAGE', lineage)\n")
    out = ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + code))
    scoped = eval(re.search(r"^SCOPED (.*)$", out, re.M).group(1))
    assert set(scoped) <= {"monthly"}
    by_step = memory.search("Rust", step="monthly", limit=50)
    assert len(scoped) == len(by_step) and all("rust" in h.content.lower() for h in by_step)
    months_saying_rust = memory.search("rust", step="monthly", exact=True, limit=50)
    assert bool(by_step) == bool(months_saying_rust)
    # unscoped: each hit printed with its content, its direct sources and its leaves
    for hit in rust:
        assert hit.content.splitlines()[0] in out
        assert repr(hit.sources()) in out and repr(hit.leaves()) in out
        assert all(leaf.sources == () for leaf in hit.leaves())
        assert [s.id for s in hit.sources()] == list(hit.record.sources)
    # highest altitude: no hit is returned together with a record it was built from
    ids = {h.id for h in rust}
    assert not ids & {s.id for h in rust for s in h.sources()}
    # leaf search: every transcript containing the literal "FastAPI", and only those
    raw = eval(re.search(r"^RAW (.*)$", out, re.M).group(1))
    assert raw and {step for step, _ in raw} == {"transcripts"}
    for _, rid in raw:
        assert "fastapi" in memory.get(rid).content.lower()
    # lineage: the tree of the record, down to the source conversations
    lineage = memory.lineage(record_id)
    assert re.search(r"^LINEAGE " + re.escape(str(lineage).splitlines()[0]), out, re.M)
    assert {leaf.step for leaf in lineage.leaves()} == {"unified"}


def test_4_8_plan_figures_and_the_branch_cost_warning(tmp_path):
    first = block("### 4.8 Cost Estimation", 0)
    out = ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + first))
    assert "Pipeline: personal-memory\nBranch: main" in out
    assert "Steps to execute:" in out
    for step, kind in (("chatgpt", "source"), ("claude", "source"), ("transcripts", "transform"),
                       ("summaries", "transform"), ("monthly", "aggregate"), ("world-model", "fold")):
        assert re.search(rf"^\s+{step}\s+→\s+[\d,]+ records?\s+\({kind}", out, re.M), (step, out)
    assert re.search(r"Estimated tokens: [\d,]+ input / [\d,]+ output", out)
    assert "Run with: pipeline.run()" in out
    plan = opened(tmp_path).plan()
    assert plan.total_input_tokens > 0 and plan.estimated_cost == 0.0
    assert set(plan.cost_by_step) == {"transcripts", "summaries", "monthly", "world-model"}
    # the branch warning: a full reprocess on a branch whose summaries use another model
    ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + "pipeline.run()\n"))
    second = block("### 4.8 Cost Estimation", 1, fill={
        'branch.transform("summaries", ..., model="gpt-4o")':
            'branch.transform("summaries", from_="transcripts", prompt=improved_summarize, model="gpt-4o")'})
    proc = run_script(tmp_path, "memory.py", prompts() + pipeline_42() + second)
    ok(proc)
    assert "⚠️  Warning: full reprocess on branch" in proc.stderr  # a CostWarning
    assert re.search(r"Estimated cost: \$0\.00 \(extractive, offline", proc.stderr)
    assert re.search(r"This is [\d.]+x (more expensive than|the (tokens|LLM calls) of) main branch\.", proc.stderr)
    branch_plan = opened(tmp_path).branch("experiment").plan(full=True)
    assert branch_plan.full and branch_plan.report["compared_to_main"]["ratio"] is not None


def test_4_9_toml_export_and_import(tmp_path):
    code = block("### 4.9 TOML as Export Format")
    code += "\nprint('STEPS', list(pipeline.steps), 'PROJECTIONS', list(pipeline.projections))\n"
    out = ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + code))
    assert (tmp_path / "pipeline.toml").is_file()
    assert "STEPS ['unified', 'transcripts', 'summaries', 'monthly', 'world-model'] PROJECTIONS ['context', 'memory-index']" in out
    text = (tmp_path / "pipeline.toml").read_text()
    assert 'prompt = "__main__:summarize_conversation"' in text


def test_4_5_branch_run_diff_eval_and_promote(tmp_path):
    locomo = small_locomo(tmp_path)
    ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + "pipeline.run()\n"))
    code = block("### 4.5 Branching")
    code += "\nprint('SCORES', main_score.precision_at_5, branch_score.precision_at_5)\n"
    out = ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + code,
                        env={"SYNIX_LOCOMO_DATA": str(locomo)}))
    assert "['summaries', 'monthly', 'world-model']" in out  # print(diff.changed_steps)
    main, branch = (float(x) for x in re.search(r"^SCORES (\S+) (\S+)$", out, re.M).groups())
    assert 0.0 <= main <= 1.0 and 0.0 <= branch <= 1.0
    # promoted only if better, as the block says: main's definition is then the branch's
    # (kept under .synix/main/, the user's script untouched)
    from synix_assets.project import project_config

    pipeline_file = project_config(tmp_path).get("pipeline")
    assert pipeline_file == (".synix/main/pipeline.py" if branch > main else "memory.py")
    assert opened(tmp_path).branch("better-summaries").stats()["steps"]["summaries"]["records"] > 150


def test_8_2_pipeline_and_8_4_experiment_as_written(tmp_path):
    locomo = small_locomo(tmp_path)
    script = prompts() + pipeline_82() + "pipeline.run()\n" + block("### 8.4 Experimentation")
    proc = run_script(tmp_path, "memory.py", script, env={"SYNIX_LOCOMO_DATA": str(locomo)})
    out = ok(proc)
    assert re.search(r"^Main: \d\.\d\d$", out, re.M) and re.search(r"^Branch: \d\.\d\d$", out, re.M)
    assert "⚠️  Warning: full reprocess on branch" in proc.stderr
    main = float(re.search(r"^Main: (\S+)$", out, re.M).group(1))
    branch = float(re.search(r"^Branch: (\S+)$", out, re.M).group(1))
    from synix_assets.project import project_config

    memory = opened(tmp_path)
    counts = built_counts(tmp_path)
    assert set(counts) == {"chatgpt-conversations", "transcripts", "summaries", "monthly", "world-model"}
    assert counts["chatgpt-conversations"] == counts["summaries"] > 150
    assert (tmp_path / "memory.py").read_text() == script  # never written over
    if branch > main:  # promoted: main serves the branch's definition
        assert project_config(tmp_path)["pipeline"] == ".synix/main/pipeline.py"
        assert "detailed_summary" in (tmp_path / ".synix" / "main" / "pipeline.py").read_text()
    else:
        assert project_config(tmp_path)["pipeline"] == "memory.py"
        diff = memory.branch("gpt4-summaries").diff()
        assert diff.changed_steps == ["summaries", "monthly", "world-model"]
    # §8.3: the CLI builds the script's pipeline too (nothing left to do)
    cli = subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(tmp_path), "run", "--json"],
                         capture_output=True, text=True, timeout=300,
                         env={**_env(), "PYTHONPATH": str(REPO)})
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["status"] == "completed"


def test_11_3_purge_cascades_and_dry_run_lists_the_affected_records(tmp_path):
    ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + "pipeline.run()\n"))
    memory = opened(tmp_path)
    before = built_counts(tmp_path)
    django = [h for h in memory.search("Django", step="unified", limit=5)]
    (first, second, *_) = [h.id for h in django]
    first_conv = memory.get(first).metadata["meta.chat.conversation_id"]
    code = block("#### Selective Purge (GDPR)")
    code = code.replace('"record-uuid"', repr(first), 1).replace('"record-uuid"', repr(second), 1)
    assert "record-uuid" not in code
    out = ok(run_script(tmp_path, "memory.py", prompts() + pipeline_42() + code))
    affected = eval(out.strip().splitlines()[-1])
    # the dry run: the second source record and everything derived from it, still there
    assert second in affected and len(affected) >= 4
    for rid in affected:
        memory.get(rid)
    # the purge: the first conversation is gone from every layer and from search
    after = opened(tmp_path)
    assert all(h.id != first for h in after.search("Django", step="unified", limit=50))
    assert built_counts(tmp_path)["unified"] == before["unified"] - 1
    assert built_counts(tmp_path)["summaries"] == before["summaries"] - 1
    conversations = [after.get(h.id).metadata.get("meta.chat.conversation_id")
                     for h in after.search("Django", step="unified", limit=50)]
    assert first_conv not in conversations


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items()
            if k not in ("SYNIX_LLM_PROVIDER", "ANTHROPIC_API_KEY", "SYNIX_PROJECT")}
