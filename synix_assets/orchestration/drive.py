"""Driving a Synix run through Dagster: the launcher of its runs, then each layer with work in
its own run (overlapping in the work graph when one runs), then the projections in one more.

app/run.py decides whether there is anything to build and records how the build ended; what
happens between is here. The build function is passed in (`make_launcher(..., build=)`) so the
definitions compiled for this build carry it into `synix_build_all` without this module importing
the application layer.
"""
from __future__ import annotations

import dataclasses
import time

from synix_assets.engine.layers import plan_layer
from synix_assets.engine.projections import projection_stale
from synix_assets.orchestration.launch import LayerIncomplete, LocalLauncher


def make_launcher(paths, ctx, scan, instance, run_config, report, llm_settings, scale, build,
                  work=None):
    """What launches this build's Dagster runs: in this process, or on the deployment that
    scale.toml names (docs/scale.md)."""
    from synix_assets.dagster_defs.compile import branch_graph, compile_defs, resources_for
    from synix_assets.dagster_defs.llm_config import launchpad_llm
    from synix_resources.llm.resource import LLMResource

    # the steps of this build's runs get a resource with the same settings as the build's client,
    # declared as the UI's definitions declare it: the runs' job snapshots are then the loaded
    # jobs', and the UI re-executes them without "the loaded version may be different"
    llm_resource = launchpad_llm(LLMResource(**llm_settings), ctx.llm_identity)
    # only this branch's graph: its assets and jobs (main's and other branches' stay untouched);
    # `work`, the build's work graph, reaches only the steps of this build's runs
    defs = compile_defs(paths.root, build=build, resources={**resources_for(paths), "llm": llm_resource},
                        branches=[paths.branch], building_run=ctx.run_id, work=work,
                        instance=instance)
    graph = branch_graph(paths, ctx.llm_identity, None)
    if scale is None:
        return LocalLauncher(ctx, scan, defs, instance, run_config, report.dagster_runs, graph,
                             repository=_repository(paths, ctx, instance))
    from synix_assets.orchestration.remote import RemoteLauncher

    # the projections still run in this process, with the same origin as local runs
    return RemoteLauncher(scale, ctx, scan, defs, instance, run_config, report.dagster_runs, graph,
                          repository=_repository(paths, ctx, instance))


def _repository(paths, ctx, instance):
    """The code location this build's runs are re-executed in: that of the synix_build_all run
    that started the build, else the project's workspace.yaml."""
    from synix_assets.dagster_defs.origin import repository_origin
    from synix_assets.dagster_defs.vocabulary import BUILD_RUN_TAG

    build_run = ctx.run_tags.get(BUILD_RUN_TAG)
    return repository_origin(paths.root, instance.get_run_by_id(build_run) if build_run else None)


def build_layers(ctx, launch, pipeline, layers, scan, full, whole, report, notify, store, graph) -> None:
    """Each layer that has work in its own Dagster run; the projections (and a stale last
    unpartitioned layer) in one more. Stops at the first layer that did not finish. With a work
    graph (`graph`), each layer's run records what the graph built for it."""
    from synix_assets.dagster_defs import storage
    from synix_assets.dagster_defs.partitions import partitions_for

    deferred = None
    retired: dict[str, list[str]] = {}
    for layer in layers:
        notify(layer, "start", {})
        if full:
            forget_current(store, layer)
        plan = plan_layer(ctx, layer, scan, None) if graph is None else graph_plan(graph.plans[layer])
        leads = (whole and layer == layers[-1] and pipeline.projections
                 and partitions_for(pipeline, layer) is None)
        # A layer planned before its inputs existed is launched with what the graph did: with
        # nothing planned it may have found work (topics="auto"), and the layer that leads the
        # projections' run must not be launched without work (its empty output would make
        # Dagster skip the projections after it).
        if graph is not None and (leads or (not plan.stale and not plan.retire)):
            plan = found_by_graph(graph, layer, plan)
        if not plan.stale and not plan.retire:
            launch.report_check(layer, plan, after_restamp=launch.restamp(pipeline, layer, plan))
            report.layers[layer] = {"built": 0, "cached": len(plan.cached), "failed": 0,
                                    "blocked": len(plan.blocked), "partial": len(plan.partial),
                                    "llm_calls": 0}
            notify(layer, "done", report.layers[layer])
            continue
        notify(layer, "planned", {"stale": len(plan.stale), "cached": len(plan.cached)})
        if plan.retire:
            retired[layer] = list(plan.retire)
        if leads:
            deferred = (layer, plan)  # built in the projections' run: one Dagster run fewer
            continue
        launched = time.monotonic()
        try:
            with storage.one_planned_event(graph is not None and graph.built_cleanly(layer)):
                launch.layer(pipeline, layer, plan)
        finally:  # also when it did not finish: what it stored is reported
            collect(report, ctx, layer, plan, scan, time.monotonic() - launched)
        notify(layer, "done", report.layers[layer])
    launch.drop_partitions(pipeline, retired)
    run_projections(ctx, launch, pipeline, report, notify, deferred, scan)


def graph_plan(plan):
    """The plan a layer is launched with while the work graph builds it: planned before any layer
    was built, so a partition blocked by an upstream failure may be built after all (the upstream
    partition is retried in this build) and is launched as stale."""
    from synix_assets.engine.outcomes import WorkItem

    return dataclasses.replace(plan, stale=plan.stale + [WorkItem(k, None, "upstream retried")
                                                         for k in plan.blocked], blocked=[])


def found_by_graph(graph, layer: str, plan):
    """The launch plan of a layer, once the graph finished it: what the graph built (or failed)
    is its work, what it found blocked stays blocked, what it found current (and built with a
    gap, design §10.2) is so."""
    from synix_assets.engine.outcomes import WorkItem

    try:
        result = graph.wait(layer)
    except Exception as exc:  # the layer did not finish: nothing downstream may read it
        raise LayerIncomplete(layer, f"{type(exc).__name__}: {exc}") from exc
    keys = [o.group_key for o in result.outcomes if o.status in ("built", "failed")]
    return dataclasses.replace(plan, stale=[WorkItem(k, None, "found by the build") for k in keys],
                               blocked=[o.group_key for o in result.outcomes if o.status == "blocked"],
                               cached=[o.group_key for o in result.outcomes if o.status == "cached"],
                               partial=dict(result.partial))


def collect(report, ctx, layer: str, plan, scan, wall: float) -> None:
    stats = (ctx.store.get_run(ctx.run_id).stats or {}).get("layers", {}).get(layer)
    if stats is None:  # the layer's step never got to record its totals: count what it stored
        left = plan_layer(ctx, layer, scan, None)
        stats = {"built": ctx.store.built_in_run(ctx.run_id).get(layer, 0),
                 "cached": len(plan.cached), "failed": 0, "unfinished": len(left.stale),
                 "unfinished_keys": left.stale_keys[:20]}
    report.layers[layer] = stats
    # wall = the whole Dagster run; seconds (from the asset) = Synix's own build work
    report.layers[layer]["wall_seconds"] = round(wall, 3)


def forget_current(store, layer: str) -> None:
    store.retire(layer, list(store.current_index(layer)))
    store.clear_checkpoints(layer)


def run_projections(ctx, launch, pipeline, report, notify, deferred, scan) -> None:
    """One run for the projections, led by the last layer when it is unpartitioned and stale."""
    from dagster import MetadataValue

    # A layer that changed makes its projections' run worth launching (the asset itself skips a
    # projection whose inputs did not change); only when nothing was built is each key checked,
    # e.g. to restore a deleted context.md. Computing every key costs a pass over all artifacts.
    changed = deferred is not None or any(v.get("built") or v.get("retired")
                                          for v in report.layers.values())
    stale = list(pipeline.projections) if changed else \
        [n for n in pipeline.projections if projection_stale(ctx, n)]
    for name in pipeline.projections:
        report.projections[name] = {"changed": name in stale}
    if not stale:
        return
    notify("projections", "start", {})
    names = ([deferred[0]] if deferred is not None else []) + stale
    launched = time.monotonic()
    try:
        events = launch.run(pipeline, names).get_asset_materialization_events()
    finally:
        if deferred is not None:
            collect(report, ctx, deferred[0], deferred[1], scan, time.monotonic() - launched)
            notify(deferred[0], "done", report.layers[deferred[0]])
    # Dagster skips the projections after a lead layer whose partition failed (recorded, not
    # fatal): they run again on their own, so the layers that were built are searchable (§10.2)
    skipped = [n for n in stale if launch.names.layer(n) not in {ev.asset_key for ev in events}]
    if deferred is not None and skipped:
        events += launch.run(pipeline, skipped).get_asset_materialization_events()
    # each projection records whether it rewrote its file/index in its `changed` metadata; one
    # that records nothing wrote nothing (a context document of a layer that holds nothing)
    recorded = {ev.asset_key for ev in events}
    written = {ev.asset_key for ev in events
               if ev.materialization.metadata.get("changed", MetadataValue.bool(True)).value}
    # what the projection's on_update hook answered ("sent", or its one-line failure)
    hooks = {ev.asset_key: ev.materialization.metadata["on_update"].value for ev in events
             if "on_update" in ev.materialization.metadata}
    for name in stale:
        key = launch.names.layer(name)
        report.projections[name] = {"changed": key in written,
                                    **({} if key in recorded else {"not_written": True}),
                                    **({"on_update": hooks[key]} if key in hooks else {})}
    notify("projections", "done", report.projections)
