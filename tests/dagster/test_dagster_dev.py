"""A real `dagster dev` (webserver + daemon) in a project built by `synix run`, started with no
DAGSTER_HOME (the project's .env points Dagster at .synix/dagster). One process serves the whole
module, through the incremental scenarios in order: Dagster's stale status (GraphQL) must match
`synix plan` at each point, and the export sensor must make the whole memory current on its own."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.dagster.live import (DagsterDev, built_demo_project, dagster_stale, plan_stale, screenshot_graph,
                               synix, wait_until)
from tests.support.screenshots import shot_path

WAIT_S = 180  # bound on waiting for the daemon's sensor and runs
BAD = "2025-03-05-tomato-blight"  # the poisoned conversation's partition key (date and title)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = built_demo_project(tmp_path_factory, "live")
    dev = DagsterDev(root).wait_serving()
    try:
        yield root, dev
    finally:
        dev.stop()


def _wait(predicate, what: str, dev: DagsterDev):
    wait_until(predicate, what, dev, WAIT_S, every_s=3)


def _searchable(root, words: str, conversation_id: str) -> bool:
    found = synix(root, "search", words, "--json")
    hits = json.loads(found.stdout)["hits"] if found.returncode == 0 else []
    return any(s["conversation_id"] == conversation_id for h in hits for s in h.get("sources", []))


def _all_fresh(dev) -> bool:
    return not any(dagster_stale(dev.staleness()).values())


def _assert_all_fresh(dev, root) -> None:
    status = dev.staleness()
    assert not any(dagster_stale(status).values()), status
    assert not any(plan_stale(root).values())


def test_plain_dagster_dev_in_a_built_project_shows_it_built_and_fresh(live):
    root, dev = live
    assert not list(root.glob(".tmp_dagster_home_*"))  # the .env gave it the project's home
    status = dev.staleness()
    assert status["episodes"] == {"FRESH": 24} and status["monthly"] == {"FRESH": 6}
    assert status["core"] == {"FRESH": 1} and status["synix_context"] == {"FRESH": 1}
    assert plan_stale(root) == dagster_stale(status)  # both: nothing to rebuild
    assert set(dev.checks().values()) == {"SUCCEEDED"}  # evaluated by the builds themselves
    assert "BetaWarning" not in dev.output() and "PreviewWarning" not in dev.output()


def test_a_copied_export_makes_the_whole_memory_current_with_nobody_running_anything(live, claude_export, conversation):
    root, dev = live
    context_before = (root / "context.md").read_text()
    incoming = root / "incoming.json"
    claude_export(incoming, [conversation("zeb-1", "Zebrafish tank", "2025-07-02", "zebrafish aquarium heater")])
    shutil.copy(incoming, root / "exports" / "new.json")

    def current() -> bool:  # cheap conditions first: each `synix search` is a process start
        return ((root / "context.md").read_text() != context_before and _all_fresh(dev)
                and _searchable(root, "zebrafish", "zeb-1"))

    _wait(current, "sensor build made the new conversation searchable and context.md current", dev)
    status = dev.staleness()
    assert status["episodes"] == {"FRESH": 25} and status["monthly"] == {"FRESH": 7}
    assert not any(plan_stale(root).values())
    def sensor_runs():
        runs = dev.gql('{ runsOrError { ... on Runs { results { jobName status tags { key value } } } } }')
        return [r for r in runs["runsOrError"]["results"]
                if {"key": "synix/trigger", "value": "exports_sensor"} in r["tags"]]

    _wait(lambda: all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in sensor_runs()),
          "sensor runs finished", dev)
    runs = sensor_runs()
    assert {"synix_build_all", "synix_build_monthly", "synix_update_projections"} <= {r["jobName"] for r in runs}
    assert {r["status"] for r in runs} == {"SUCCESS"}, runs
    screenshot_graph(dev.base, "memory", shot_path(root.parent, "dagster-after-sensor-run.png"))


def test_a_re_export_with_a_changed_conversation_is_rebuilt_by_the_sensor_and_ends_fresh(live, claude_export, conversation):
    root, dev = live
    claude_export(root / "exports" / "new.json",
                  [conversation("zeb-1", "Zebrafish tank", "2025-07-02", "axolotl aquarium heater")])

    _wait(lambda: _searchable(root, "axolotl", "zeb-1") and _all_fresh(dev), "sensor rebuilt the changed conversation", dev)
    _assert_all_fresh(dev, root)


def test_a_prompt_edit_is_stale_in_dagster_exactly_where_synix_plan_would_rebuild(live):
    root, dev = live
    text = (root / "pipeline.py").read_text()
    (root / "pipeline.py").write_text(text.replace("prompt=prompts.episode_summary",
                                                   "prompt=lambda r: 'Shorter: ' + r.content"))
    dev.reload()
    status = dev.staleness()
    assert status["transcripts"] == {"FRESH": 25}
    assert status["episodes"] == {"STALE": 25} and status["monthly"] == {"STALE": 7}
    assert status["core"] == {"STALE": 1} and status["memory_index"] == {"STALE": 1}
    assert plan_stale(root) == dagster_stale(status)
    shot = shot_path(root.parent, "dagster-after-prompt-edit.png")
    screenshot_graph(dev.base, "memory", shot, wait_text="Unsynced")  # the stale badge is shown
    assert shot.stat().st_size > 10_000
    rebuilt = synix(root, "run", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    _assert_all_fresh(dev, root)


def test_monthly_to_topical_leaves_no_orphan_asset_and_everything_fresh(live):
    from synix_assets.app.init import switch_template

    root, dev = live
    switch_template(root, "topical")
    rebuilt = synix(root, "run", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    dev.reload()
    assert "monthly" not in dev.asset_keys()
    known = dev.gql("{ assetsOrError { ... on AssetConnection { nodes { key { path } } } } }")
    assert ["monthly"] not in [n["key"]["path"] for n in known["assetsOrError"]["nodes"]]  # wiped
    _assert_all_fresh(dev, root)


def test_a_branch_is_its_own_graph_in_the_ui_stale_where_synix_plan_says_and_built_by_a_ui_run(live):
    root, dev = live
    created = synix(root, "branch", "create", "exp", "--json")
    assert created.returncode == 0, created.stderr[-2000:]
    exp = root / ".synix" / "branches" / "exp" / "pipeline.py"
    exp.write_text(exp.read_text().replace("prompt=prompts.episode_summary)",
                                           "prompt=prompts.episode_summary, max_tokens=300)"))
    dev.reload()
    keys = dev.asset_keys()
    assert {"branches/exp/transcripts", "branches/exp/episodes", "branches/exp/topics",
            "branches/exp/core", "branches/exp/memory_index", "episodes"} <= keys

    def branch_status():
        return {k.removeprefix("branches/exp/"): v for k, v in dev.staleness().items()
                if k.startswith("branches/exp/")}

    status = branch_status()
    layers = ("transcripts", "episodes", "topics", "core")
    plan = plan_stale(root, "--branch", "exp")
    # inherited from main: transcripts current, the edited episodes and all above them stale
    assert {l: dagster_stale(status)[l] for l in layers} == {l: plan[l] for l in layers}
    assert plan["transcripts"] == 0 and plan["episodes"] == 25 and plan["core"] == 1
    assert status["memory_index"] == {"MISSING": 1}  # the branch's own index is not built yet
    shot = shot_path(root.parent, "dagster-branch-graph.png")
    screenshot_graph(dev.base, "branch_exp", shot, wait_text="Unsynced")
    assert shot.stat().st_size > 10_000

    main_context = (root / "context.md").read_bytes()
    run_id = dev.launch("exp__synix_build_all", {"synix/trigger": "ui"})
    _wait(lambda: dev.run_status(run_id) in ("SUCCESS", "FAILURE", "CANCELED"), "the branch build ended", dev)
    assert dev.run_status(run_id) == "SUCCESS", dev.output()[-3000:]
    assert not any(plan_stale(root, "--branch", "exp").values())
    assert not any(dagster_stale(branch_status()).values())
    assert (root / ".synix" / "branches" / "exp" / "context.md").exists()
    assert (root / "context.md").read_bytes() == main_context  # main untouched


def test_a_failed_partition_is_failed_in_dagster_and_what_is_left_matches_synix_plan(live, claude_export, conversation):
    root, dev = live
    claude_export(root / "exports" / "poison.json",
                  [conversation("bad-1", "Tomato blight", "2025-03-05", "SYNIX_FAIL_400 tomato blight")])
    _wait(lambda: BAD in dev.failed_partitions("episodes") and dev.active_runs() == 0,
          "the sensor's build failed on the poisoned conversation and ended", dev)
    status = dev.staleness()
    plan = plan_stale(root)
    assert plan["transcripts"] == 0 and plan["episodes"] == 1  # the failed one, retried next build
    assert status["episodes"]["MISSING"] == 1 and dev.failed_partitions("episodes") == [BAD]
    # Per layer, Dagster's "needs a build" (stale, or never materialized: the failed partition)
    # is exactly Synix's plan; the month it feeds is built from what is there (design §10.2):
    # current in both, its gap on its synix_up_to_date check.
    # (topic rollups excepted: with an upstream partition pending, `synix plan` counts every
    # topic as possibly affected, while the build rebuilds none of them — docs/dagster.md)
    layers = [k for k in plan if k not in ("memory_index", "synix_context", "topics")]
    todo = {k: status[k].get("STALE", 0) + status[k].get("MISSING", 0) for k in layers}
    assert todo == {k: plan[k] for k in layers}
    # The one difference (docs/dagster.md): `synix plan` marks the projections as pending (they
    # will be rewritten once the failed partition builds); Dagster shows them current, because
    # every input they read is.
    assert status["memory_index"] == {"FRESH": 1} and plan["memory_index"] == 1
    # the poisoned export removed: the next sensor build retires it and everything ends fresh
    (root / "exports" / "poison.json").unlink()
    _wait(lambda: not any(plan_stale(root).values()) and dev.active_runs() == 0 and _all_fresh(dev),
          "the sensor's build after removing the poisoned export", dev)
