"""A record built from answers the LLM response cache served (a prompt reverted to one answered
before) is counted as such: the run summary, `synix status`, `synix runs` and Dagster's
materialization metadata say "built N, of them N from the response cache, 0 calls", never pass it
for fresh model work; "cached" stays what it was (the record already existed, nothing done)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from synix_assets.app.run import run_build
from synix_assets.app.status import project_status
from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.instance import dagster_instance

EPISODES = 'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)\n'
REWORDED = '''
def reworded(record):
    return "Summarise it differently.\\n" + prompts.episode_summary(record)


pipeline.transform("episodes", from_="transcripts", prompt=reworded)
'''


def _cli(root, *args):
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake"}
    return subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _reverted_build(paths):
    """Build, build with another episode prompt, put the first prompt back."""
    pipeline = paths.root / "pipeline.py"
    original = pipeline.read_text()
    assert EPISODES in original
    first = run_build(paths)
    pipeline.write_text(original.replace(EPISODES, REWORDED))
    run_build(paths)
    pipeline.write_text(original)
    return first


def test_a_reverted_prompt_reports_its_records_as_built_from_the_response_cache(demo_project):
    first = _reverted_build(demo_project)
    assert first.layers["episodes"]["from_response_cache"] == 0  # the first build asked the model
    out = _cli(demo_project.root, "run", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["llm_calls"] == 0
    assert report["layers"]["episodes"] == {"built": 24, "from_response_cache": 24, "cached": 0, "failed": 0}
    assert report["layers"]["transcripts"]["cached"] == 24
    assert report["layers"]["transcripts"]["from_response_cache"] == 0

    status = project_status(demo_project)["layers"]["episodes"]
    assert status["last_run"] == {"built": 24, "from_response_cache": 24, "cached": 0}
    assert status["cache_hit_ratio"] == 1.0  # no partition needed a model call
    runs = json.loads(_cli(demo_project.root, "runs", "--json").stdout)
    latest = runs["runs"][0] if isinstance(runs, dict) else runs[0]
    assert latest["from_response_cache"] == latest["built"] == 31

    with dagster_instance(demo_project) as instance:
        md = instance.get_latest_materialization_event(layer_key("episodes")).asset_materialization.metadata
    assert md["cache"].value == "response cache" and md["from_response_cache"].value is True
    # no model call, so none of the provider's usage keys (`fake.calls`, …): Insights sums only what was paid
    assert not [key for key in md if key.endswith((".calls", ".input_tokens", ".cost_usd"))], dict(md)


def test_the_run_summary_says_how_many_built_records_the_response_cache_answered(demo_project):
    _reverted_build(demo_project)
    out = _cli(demo_project.root, "run")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "built 24 (24 from response cache)" in text
    assert "reused: 31 of the 31 records built took every answer from the LLM response cache" in text
    status = " ".join(_cli(demo_project.root, "status").stdout.split())
    assert "reused = of them answered from the LLM response cache" in status


def test_records_the_model_answered_are_not_counted_as_from_the_response_cache(demo_project):
    report = run_build(demo_project)
    assert report.layers["episodes"]["built"] == 24 and report.layers["episodes"]["llm_calls"] == 24
    assert all(v.get("from_response_cache", 0) == 0 for v in report.layers.values())
    assert project_status(demo_project)["layers"]["episodes"]["cache_hit_ratio"] == 0.0
