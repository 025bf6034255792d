"""`transform(validate=…)` (design §4.2) and what a refused output does (§10.2): it is logged, the
build goes on and exits non-zero, the layers above build from what is there with the gap recorded
(`synix plan`, `synix status`, Dagster's `synix_up_to_date` check), and the next build fills it.
Real builds (Dagster runs, SQLite) with the offline summariser."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import dagster as dg
import pytest

from synix_assets.app.plan import make_plan as plan_build
from synix_assets.app.run import run_build
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.vocabulary import CHECK_NAME
from synix_assets.pipeline.spec import PipelineSpec
from synix_assets.pipeline.validators import Flag, judge
from synix_assets.pipeline.records import Record
from synix_resources.errors import BuildFailed, PipelineDefinitionError
from synix_resources.store.artifact_store import ArtifactStore

EPISODES = 'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)\n'

STRICT = '''
from synix import Flag


def no_weird(record):
    if "weird" in record.content:
        return "mentions weird"
    if "topic1" in record.content:
        return Flag("short talk")
    return None


pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary, validate=no_weird)
'''


def _use(root, replacement: str) -> None:
    path = root / "pipeline.py"
    text = path.read_text()
    assert EPISODES in text
    path.write_text(text.replace(EPISODES, replacement))


def _cli(paths, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env["SYNIX_LLM_PROVIDER"] = "fake"
    return subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _partition_name(paths, group_key: str) -> str:
    with ArtifactStore(paths.store) as store:
        return store.partition_names([group_key])[group_key]


def _check(paths, layer: str):
    instance = dagster_instance(paths)
    key = next(k for k in instance.get_asset_keys() if k.path[-1] == layer)
    record = instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(key, CHECK_NAME))
    return record.event.dagster_event.event_specific_data


def test_a_refused_output_fails_its_partition_and_the_layers_above_build_with_the_gap_then_fill_it(small_project):
    paths = small_project(4, marker_at={2: "weird"})  # conv-0 and conv-2 in January, 1 and 3 in February
    _use(paths.root, STRICT)
    with pytest.raises(BuildFailed) as info:
        run_build(paths)
    report = info.value.report
    assert [(f["layer"], f["group_key"]) for f in report.failures] == [("episodes", "conv-2")]
    assert report.failures[0]["error"] == ("validator no_weird refused the output: mentions weird — the next "
                                           "build retries it; change the prompt or the validator to accept it")
    store = ArtifactStore(paths.store)
    try:
        assert set(store.current_index("episodes")) == {"conv-0", "conv-1", "conv-3"}
        flagged = store.current("episodes", "conv-1")
        assert flagged.metadata["meta.custom.validation_flags"] == ["short talk"]
        assert "meta.custom.validation_flags" not in store.current("episodes", "conv-0").metadata
        # the month of the refused episode is built from the episode that is there; the core too
        january = store.current("monthly", "2025-01")
        assert january is not None and january.metadata["meta.chat.conversation_count"] == 1
        assert set(store.current_index("monthly")) == {"2025-01", "2025-02"}
        assert store.current("core", "all") is not None
    finally:
        store.close()
    # the gap is visible: plan, status (CLI, JSON) and Dagster's check agree
    shown = "episodes/" + _partition_name(paths, "conv-2")  # as Dagster names the partition
    plan = plan_build(paths)
    assert plan.layers["monthly"].partial == 1 and plan.layers["monthly"].stale == 0
    assert plan.layers["monthly"].gaps == {"2025-01": [shown]}
    assert plan.layers["core"].gaps == {"all": [shown]}
    assert plan.layers["episodes"].failed == 1 and plan.layers["episodes"].stale == 1  # retried
    status = json.loads(_cli(paths, "status", "--json").stdout)["layers"]
    assert status["monthly"]["partial"] == 1 and status["core"]["gaps"] == {"all": [shown]}
    table = _cli(paths, "status").stdout
    assert f"gap monthly/2025-01 is built without {shown} (failed; the next build retries it)" \
        in " ".join(table.split())
    check = _check(paths, "monthly")
    assert not check.passed and "1 built with a gap" in check.description
    assert check.metadata["gaps"].value == {"2025-01": [shown]}
    # the next build retries the refused episode; refused again, nothing above changes
    again = _cli(paths, "run", "--json")
    assert again.returncode == 1 and "mentions weird" in again.stderr
    assert {k: v["built"] for k, v in json.loads(again.stdout)["layers"].items()} == \
        {"transcripts": 0, "episodes": 0, "monthly": 0, "core": 0}
    # a validator that accepts it: a new step version, so the episodes are made again (their
    # answers come from the response cache), the gap is filled and its month and the core rebuilt
    (paths.root / "pipeline.py").write_text(
        (paths.root / "pipeline.py").read_text().replace('return "mentions weird"', "return None"))
    fixed = run_build(paths)
    assert fixed.layers["episodes"]["built"] == 4
    # February's episodes came back identical (cached answers): only January is made again
    assert fixed.layers["monthly"]["built"] == 1 and fixed.layers["monthly"]["cached"] == 1
    assert fixed.layers["core"]["built"] == 1
    plan = plan_build(paths)
    assert all(not l.partial and not l.failed for l in plan.layers.values())
    assert _check(paths, "monthly").passed


def _pipeline(validate):
    spec = PipelineSpec("p")
    spec.source("s", path="exports")
    spec.merge("transcripts", from_=["s"])
    spec.transform("episodes", from_="transcripts", prompt=lambda r: r.content, validate=validate)
    return spec


def keep_all(record):
    return True


def keep_long(record):
    return len(record.content) > 10 or "too short"


def test_the_validator_is_part_of_the_step_version_by_its_source():
    plain, kept, long = (_pipeline(v).version("episodes") for v in (None, keep_all, keep_long))
    assert len({plain, kept, long}) == 3
    assert _pipeline(keep_all).version("episodes") == kept  # the same source, the same version
    assert _pipeline(None).version("transcripts") == PipelineSpec.version(_pipeline(keep_all), "transcripts")


def test_a_validator_that_is_not_a_function_is_refused_in_one_line():
    with pytest.raises(PipelineDefinitionError) as info:
        _pipeline("yes")
    assert info.value.one_line().startswith("step 'episodes' (transform): validate='yes' is not a function")


@pytest.mark.parametrize("answer,refused,flag", [
    (None, "", ""), (True, "", ""), (Flag("look at it"), "", "look at it"),
    (False, "validator v refused the output", ""),
    ("  too   short ", "validator v refused the output: too short", ""),
    (3, "validator v returned int 3; expected None/True (keep), Flag(reason) (keep, marked), "
        "False or a reason (refuse)", ""),
])
def test_the_validators_answer_decides_keep_flag_or_refuse(answer, refused, flag):
    def v(record):
        return answer
    verdict = judge(v, Record("", "episodes", "g", "text"))
    assert (verdict.refused, verdict.flag) == (refused, flag)


def test_a_validator_that_raises_or_exits_refuses_that_output_only():
    def raises(record):
        raise KeyError("summary")

    def exits(record):
        sys.exit(3)
    assert judge(raises, Record("", "e", "g", "t")).refused == "validator raises raised KeyError: 'summary'"
    assert judge(exits, Record("", "e", "g", "t")).refused.startswith("validator exits tried to end the process")
