"""The work graph of `synix run` (engine/schedule.py): layers overlap, artifacts do not change.

Two copies of the demo project are built from the same exports, one as a whole build (the
graph) and one layer after layer (`from_layer`, which builds the same layers without it); both
run real Dagster instances, real SQLite stores and the fake LLM.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

from synix_assets.app.run import run_build
from synix_assets.engine import schedule
from synix_assets.project import ProjectPaths
from synix_assets.app.init import demo_exports, init_project
from synix_resources.store.artifact_store import ArtifactStore

LAYERS = ("transcripts", "episodes", "monthly", "core")


def _artifacts(paths) -> dict:
    store = ArtifactStore(paths.store)
    try:
        # the projects live in two folders: only the export's path may differ
        return {layer: {a.group_key: (a.content, a.content_hash, a.materialization_key,
                                      {k: v for k, v in a.metadata.items() if k != "meta.source.path"})
                        for a in store.list_layer(layer)} for layer in LAYERS}
    finally:
        store.close()


def _times(paths, layer: str) -> list[str]:
    store = ArtifactStore(paths.store)
    try:
        return sorted(a.created_at for a in store.list_layer(layer))
    finally:
        store.close()


def test_overlapped_build_stores_exactly_what_a_layer_by_layer_build_stores(tmp_path, monkeypatch):
    graph_runs = []
    real_start = schedule.WorkGraph.start

    def counted_start(self):
        graph_runs.append(self.ctx.run_id)
        return real_start(self)

    monkeypatch.setattr(schedule.WorkGraph, "start", counted_start)
    overlapped = ProjectPaths(init_project(tmp_path / "a", exports=demo_exports()))
    sequential = ProjectPaths(init_project(tmp_path / "b", exports=demo_exports()))
    first = run_build(overlapped)
    assert len(graph_runs) == 1
    second = run_build(sequential, from_layer="transcripts")
    assert len(graph_runs) == 1  # a partial selection builds layer by layer
    assert _artifacts(overlapped) == _artifacts(sequential)
    assert first.to_json()["layers"] == second.to_json()["layers"]
    assert first.to_json()["llm_calls"] == second.to_json()["llm_calls"] > 0
    body = lambda paths: (paths.root / "context.md").read_text().rsplit("<!--", 1)[0]  # noqa: E731
    assert body(overlapped) == body(sequential)  # all but the generated-at comment
    assert run_build(overlapped).noop


def test_a_months_rollup_is_built_before_the_last_episodes(demo_project, monkeypatch):
    # 24 conversations over 6 months, 4 calls at a time of 0.2 s each: the episodes take 6 waves,
    # and the first month's rollup must not wait for them all
    monkeypatch.setenv("SYNIX_FAKE_LATENCY_S", "0.2")
    monkeypatch.setenv("SYNIX_LLM_CONCURRENCY", "4")
    report = run_build(demo_project)
    assert report.to_json()["layers"]["monthly"]["built"] == 6
    assert _times(demo_project, "monthly")[0] < _times(demo_project, "episodes")[-1]
    assert _times(demo_project, "core")[0] > _times(demo_project, "monthly")[-1]


def test_the_scheduler_runs_deeper_levels_first():
    import threading

    pool = schedule._PriorityPool(1)
    order, gate = [], threading.Event()
    try:
        pool.submit((0, 0), gate.wait)  # holds the only worker while the rest is queued
        time.sleep(0.05)
        futures = [pool.submit(p, order.append, name) for p, name in
                   [((-1, 2), "episode of month 3"), ((-1, 0), "episode of month 1"),
                    ((-2, 0), "rollup"), ((-3, 0), "fold step")]]
        gate.set()
        for f in futures:
            f.result(timeout=10)
    finally:
        pool.stop()
    assert order == ["fold step", "rollup", "episode of month 1", "episode of month 3"]


def test_a_stopped_scheduler_never_sends_what_was_queued():
    import threading

    pool = schedule._PriorityPool(1)
    gate = threading.Event()
    sent = []
    first = pool.submit((0,), gate.wait, 5)
    queued = [pool.submit((1, i), sent.append, i) for i in range(5)]
    deadline = time.monotonic() + 10
    while not first.running() and time.monotonic() < deadline:  # the one call in flight
        time.sleep(0.01)
    stopper = threading.Thread(target=pool.stop)
    stopper.start()
    while not all(f.cancelled() for f in queued) and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.set()  # the call in flight ends only once the stop has dropped the queue
    stopper.join(timeout=30)
    assert first.result(timeout=1) is True
    assert sent == [] and all(f.cancelled() for f in queued)


def _branch_artifacts(paths) -> dict:
    """Every current artifact of the branch's layers (the export's path aside)."""
    with paths.open_store() as store:
        out = {}
        for layer in paths.load_pipeline().layer_order():
            ids = [ref.artifact_id for ref in store.current_index(layer).values()]
            out[layer] = {a.group_key: (a.content, a.content_hash, a.materialization_key)
                          for a in store.get_many(ids)}
        return out


def test_a_branch_build_goes_through_the_work_graph_and_stores_what_a_layer_by_layer_build_does(
        tmp_path, monkeypatch):
    from synix_assets.app import branches

    topical = Path(__file__).resolve().parents[2] / "synix_assets" / "examples" / "topical.py"
    graph_branches = []
    real_start = schedule.WorkGraph.start

    def counted_start(self):
        graph_branches.append(self.ctx.paths.branch)
        return real_start(self)

    monkeypatch.setattr(schedule.WorkGraph, "start", counted_start)
    built = {}
    for name, options in (("overlapped", {}), ("sequential", {"from_layer": "transcripts"})):
        main = ProjectPaths(init_project(tmp_path / name, exports=demo_exports()))
        branches.create_branch(main, "topical", pipeline_file=topical)
        report = run_build(main.on_branch("topical"), **options)
        assert report.branch == "topical" and report.status == "completed"
        built[name] = (main.on_branch("topical"), report)
    assert graph_branches == ["topical"]  # only the whole build used the graph
    (a, first), (b, second) = built["overlapped"], built["sequential"]
    assert _branch_artifacts(a) == _branch_artifacts(b)
    assert _branch_artifacts(a)["topics"]  # the branch's own layer was built
    assert first.to_json()["layers"] == second.to_json()["layers"]
    assert run_build(a).noop


def test_a_last_layer_left_with_nothing_to_build_still_gets_its_index_written_and_no_empty_context(tmp_path):
    # topics that match no episode: the topical rollups and the core fold over them end up with
    # nothing to build, which the plan made before the episodes existed could not know
    root = init_project(tmp_path / "p", exports=demo_exports(), template="topical")
    pipeline_py = root / "pipeline.py"
    text = pipeline_py.read_text(encoding="utf-8")
    start = text.index("topics=[")
    pipeline_py.write_text(text[:start] + 'topics=["quantum chromodynamics lattice"]'
                           + text[text.index("]", start) + 1:], encoding="utf-8")
    paths = ProjectPaths(root)
    report = run_build(paths)
    out = report.to_json()
    assert out["layers"]["topics"]["built"] == 0 and out["layers"]["core"]["built"] == 0
    assert out["projections"]["memory-index"]["changed"] is True
    # a context document drawn from no core would tell the agent it remembers nothing
    assert out["projections"]["context"]["changed"] is False
    assert "not_written" in out["projections"]["context"], out["projections"]["context"]
    assert not (root / "context.md").exists()
    import sqlite3

    with contextlib.closing(sqlite3.connect(paths.search)) as db:  # the episodes are indexed
        assert db.execute("SELECT count(*) FROM docs WHERE layer = 'episodes'").fetchone()[0] \
            == out["layers"]["episodes"]["built"] > 0


def test_the_graph_starts_before_dagster_loads_and_only_the_layer_runs_record_its_artifacts(
        demo_project, monkeypatch):
    import dagster as dg

    from synix_assets.dagster_defs import instance as dagster_instance_module
    from synix_assets.dagster_defs.graph import MAIN_NAMES

    order = []
    real_start, real_instance = schedule.WorkGraph.start, dagster_instance_module.dagster_instance

    def start(self):
        order.append("graph")
        return real_start(self)

    def instance(paths):
        order.append("dagster")
        return real_instance(paths)

    monkeypatch.setattr(schedule.WorkGraph, "start", start)
    monkeypatch.setattr(dagster_instance_module, "dagster_instance", instance)
    report = run_build(demo_project)
    assert order == ["graph", "dagster"]
    built = report.to_json()["layers"]
    # The graph stored the transcripts while Dagster loaded; the definitions' sync with the store
    # must leave them (and everything else this run built) to the layer runs: each partition is
    # materialized once, by a run, and no event is runless.
    with real_instance(demo_project) as dagster:
        for layer in LAYERS:
            records = dagster.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=MAIN_NAMES.layer(layer)), limit=1000).records
            assert len(records) == built[layer]["built"] > 0
            assert all(r.run_id for r in records)
            keys = [r.partition_key for r in records]
            assert len(set(keys)) == len(keys)


def test_each_layer_is_planned_once_by_the_graph_and_once_by_its_own_check(
        demo_project, monkeypatch, claude_export, conversation):
    # Each layer's `synix_up_to_date` check used to plan all its ancestors again (the core's
    # check planned every layer); layers the graph finished cannot change before the build ends.
    import collections

    from synix_assets.dagster_defs.graph import MAIN_NAMES
    from synix_assets.engine import layers

    run_build(demo_project)
    claude_export(demo_project.root / "exports" / "new.json",
                  [conversation("new-conv-1", "Kayak trip", "2025-03-20", "sea kayaking near Sausalito")])
    planned = []
    real_plan_layer = layers.plan_layer

    def counted(ctx, layer, *args, **kwargs):
        planned.append(layer)
        return real_plan_layer(ctx, layer, *args, **kwargs)

    monkeypatch.setattr(layers, "plan_layer", counted)
    report = run_build(demo_project)
    assert report.status == "completed" and report.to_json()["layers"]["episodes"]["built"] == 1
    assert collections.Counter(planned) == {layer: 2 for layer in LAYERS}
    for layer in LAYERS:  # and every check still reports its layer as built, as a fresh plan does
        evaluation = _latest_check_evaluation(demo_project, MAIN_NAMES.layer(layer))
        assert evaluation.passed, (layer, evaluation.metadata)



def _latest_check_evaluation(paths, asset_key):
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    try:
        for record in instance.get_event_records(
                dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION),
                limit=50, ascending=False):
            evaluation = record.event_log_entry.dagster_event.event_specific_data
            if evaluation.asset_key == asset_key:
                return evaluation
        raise AssertionError(f"no check evaluation of {asset_key}")
    finally:
        instance.dispose()


def test_check_plans_are_kept_only_for_finished_layers_and_the_same_export_scan(demo_project):
    import dataclasses

    from synix_assets.engine.context import BuildContext
    from synix_resources.llm.factory import make_client

    run_build(demo_project)
    store = ArtifactStore(demo_project.store)
    ctx = BuildContext(demo_project.load_pipeline(), store, make_client(provider="fake"),
                       demo_project, run_id="check-run")
    try:
        scan = ctx.reader.scan()
        graph = schedule.WorkGraph(ctx, list(LAYERS), scan)  # never started: no thread builds
        graph._done["transcripts"].set()  # as if its thread had finished the layer
        first = graph.plan_for_check(ctx, scan, "episodes")
        assert set(graph._checked) == {"transcripts"}  # episodes is not finished: not kept
        again = graph.plan_for_check(ctx, scan, "episodes")
        assert again["transcripts"] is first["transcripts"]  # reused, not planned again
        assert again["episodes"] is not first["episodes"]
        changed = dataclasses.replace(scan, fingerprint="exports changed since")
        fresh = graph.plan_for_check(ctx, changed, "episodes")
        assert fresh["transcripts"] is not first["transcripts"]
        assert fresh["transcripts"].cached == first["transcripts"].cached
    finally:
        ctx.llm.close()
        store.close()
