"""The README's demo, automated: init → run → search → context.md → no-op run → topical
rollups (only the new layers build) → search again → a prompt edit. At every step `synix plan`
predicts exactly the LLM calls `synix run` then makes."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_assets.app.init import switch_template
from synix_assets.cli.main import main


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")


def synix(*args, cwd: Path) -> dict | str:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, list(args))
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout) if "--json" in args else result.stdout


def planned_then_run(root: Path) -> tuple[dict, dict, dict]:
    """(plan, run --json, the run's per-layer stats), checking the plan's call count per layer."""
    plan = synix("plan", "--json", cwd=root)
    run = synix("run", "--json", cwd=root)
    assert run["llm_calls"] == plan["llm_calls"]
    layers = {}
    if run["llm_calls"] or any(v["built"] for v in run["layers"].values()):
        layers = synix("runs", run["run_id"], "--json", cwd=root)["layers"]
        assert {l: v.get("llm_calls", 0) for l, v in layers.items()} == \
            {l: v["llm_calls"] for l, v in plan["layers"].items()}
    return plan, run, layers


def built_cached(run: dict) -> dict:
    return {l: (v["built"], v["cached"]) for l, v in run["layers"].items()}


def leaf_titles(root: Path, artifact_id: str) -> tuple[set[str], set[str]]:
    """(layers, source titles) anywhere in the artifact's lineage."""
    tree = synix("lineage", artifact_id, "--json", cwd=root)
    layers, titles, stack = set(), set(), [tree]
    while stack:
        node = stack.pop()
        layers.add(node["layer"])
        if not node["parents"]:
            titles.add(node["source"]["title"])
        stack.extend(node["parents"])
    return layers, titles


def test_demo_flow(tmp_path):
    synix("init", "demo", "--demo", cwd=tmp_path)
    root = tmp_path / "demo"

    plan, run, _ = planned_then_run(root)
    assert plan["llm_calls"] == 36
    assert built_cached(run) == {"transcripts": (24, 0), "episodes": (24, 0), "monthly": (6, 0), "core": (1, 0)}

    first = synix("search", "marathon", "--json", cwd=root)["hits"]
    assert first and first[0]["provenance"]
    assert any("Marathon" in s["title"] for h in first for s in h["sources"])
    monthly_hits = synix("search", "marathon", "--layers", "monthly", "--json", cwd=root)["hits"]
    assert monthly_hits and all(h["layer"] == "monthly" for h in monthly_hits)
    assert (root / "context.md").read_text().startswith("# Memory of me")

    plan, run, _ = planned_then_run(root)
    assert plan["nothing_to_do"] and run["llm_calls"] == 0
    assert built_cached(run) == {"transcripts": (0, 24), "episodes": (0, 24), "monthly": (0, 6), "core": (0, 1)}

    switch_template(root, "topical")
    plan, run, _ = planned_then_run(root)
    assert built_cached(run) == {"transcripts": (0, 24), "episodes": (0, 24), "topics": (6, 0), "core": (1, 0)}
    assert run["llm_calls"] == 12

    second = synix("search", "marathon", "--json", cwd=root)["hits"]
    assert [h["artifact_id"] for h in second] != [h["artifact_id"] for h in first]
    layers, titles = leaf_titles(root, second[0]["artifact_id"])
    assert "topics" in layers and "monthly" not in layers
    assert any("Marathon" in t for t in titles)
    topic_hits = synix("search", "marathon", "--layers", "topics", "--json", cwd=root)["hits"]
    assert topic_hits and topic_hits[0]["title"].startswith("topics:")

    # A prompt edit: the episodes rebuild, and everything above them; transcripts stay cached.
    pipeline = root / "pipeline.py"
    text = pipeline.read_text().replace("prompt=prompts.episode_summary", "prompt=short_episode")
    text = text.replace("pipeline = Pipeline(", 'def short_episode(record):\n'
                        '    return "Summarise in two sentences:\\n" + record.content\n\n\npipeline = Pipeline(', 1)
    pipeline.write_text(text)
    plan, run, layers = planned_then_run(root)
    assert plan["layers"]["episodes"]["reasons"] == {"prompt/model changed": 24}
    assert built_cached(run)["transcripts"] == (0, 24) and built_cached(run)["episodes"] == (24, 0)
    assert layers["episodes"]["llm_calls"] == 24


def test_demo_command(tmp_path, monkeypatch):
    monkeypatch.delenv("SYNIX_LLM_PROVIDER")  # the demo picks the offline provider itself
    out = synix("demo", str(tmp_path / "d"), cwd=tmp_path)
    flat = " ".join(out.split())
    for step in ("First build", "Nothing changed", "$ synix branch create topical",
                 "$ synix run --branch topical", "only topical rollups and core are new",
                 'Search "marathon" on topical', "main and topical side by side",
                 "step monthly: removed", "step topics: added", "$ synix branch promote topical",
                 "synix branch promote main@previous", "The context document",
                 "extractive = offline sentence selection"):
        assert step in flat, step
    # the branch's build reuses main's transcripts and episodes; main's build after the promote is a no-op
    assert flat.count("Nothing changed") == 2
    assert (tmp_path / "d" / "context.md").exists()
    assert "topics" in (tmp_path / "d" / "pipeline.py").read_text()
    assert "SYNIX_LLM_PROVIDER" not in os.environ  # restored after the demo
