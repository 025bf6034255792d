"""`synix run`: build a project through Dagster, one single-run backfill per layer that changed.

The plan (Synix's materialization keys) decides which layers have work; for each, the stale
partitions are registered with Dagster and one in-process run materializes the range that covers
them. Layers with nothing to do launch nothing, and a build whose inputs, pipeline and model are
all unchanged since the last clean build returns before loading Dagster at all.
"""
from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from synix_assets.engine import progress
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import plan_layer
from synix_assets.engine.locking import project_lock
from synix_assets.engine.projections import projection_stale
from synix_assets.project import ProjectPaths
from synix_resources.errors import BuildFailed, PipelineDefinitionError
from synix_resources.fingerprints import sha256_text
from synix_resources.llm.factory import make_client

log = logging.getLogger("synix.run")
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@dataclass
class BuildReport:
    run_id: str
    layers: dict[str, dict] = field(default_factory=dict)
    projections: dict[str, dict] = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)
    skipped_inputs: list[dict] = field(default_factory=list)
    dagster_runs: list[str] = field(default_factory=list)
    provider: str = ""
    seconds: float = 0.0
    noop: bool = False

    def total(self, key: str) -> float:
        return sum(v.get(key, 0) for v in self.layers.values())

    def to_json(self) -> dict:
        return {"run_id": self.run_id,
                "layers": {k: {"built": v.get("built", 0), "cached": v.get("cached", 0),
                               "failed": v.get("failed", 0)} for k, v in self.layers.items()},
                "llm_calls": int(self.total("llm_calls")), "tokens_in": int(self.total("tokens_in")),
                "tokens_out": int(self.total("tokens_out")),
                "cost_usd": round(self.total("cost_usd"), 6), "seconds": round(self.seconds, 3),
                "provider": self.provider, "failures": self.failures,
                "projections": self.projections, "skipped_inputs": self.skipped_inputs}


def dagster_instance(paths: ProjectPaths):
    import dagster as dg

    from synix_assets.dagster_defs import storage

    storage.write_instance_yaml(paths.dagster_home)
    os.environ["DAGSTER_HOME"] = str(paths.dagster_home)
    instance = dg.DagsterInstance.get()
    instance.get_dynamic_partitions("conversations")  # creates the databases before we hold them
    storage.tune(paths.dagster_home)
    return instance


def _fingerprint(ctx, scan, layers: list[str]) -> str:
    parts = [scan.fingerprint, ctx.llm_identity,
             *(f"{l}:{ctx.version(l)}" for l in layers), *sorted(ctx.pipeline.projections)]
    return sha256_text("\n".join(parts))


def _selected_layers(pipeline, select: str | None, from_layer: str | None) -> list[str]:
    order = pipeline.layer_order()
    for name in (select, from_layer):
        if name and name not in pipeline.steps:
            raise PipelineDefinitionError(f"unknown layer {name!r}", hint=f"layers: {', '.join(order)}")
    if select:
        needed = {select} | pipeline.upstream(select)
        return [l for l in order if l in needed]
    if from_layer:
        return [l for l in order if l == from_layer or l in pipeline.downstream(from_layer)]
    return order


def run_build(paths: ProjectPaths, *, select: str | None = None, from_layer: str | None = None,
              full: bool = False, batch: bool = False, replay: bool = False,
              llm_config: dict | None = None, lock_timeout_s: float | None = None,
              progress: Callable[[str, str, dict], None] | None = None) -> BuildReport:
    """Build the project; raises BuildFailed (after storing everything that succeeded) if any
    partition failed."""
    started = time.monotonic()
    notify = progress or (lambda *a: None)
    pipeline = paths.load_pipeline()
    layers = _selected_layers(pipeline, select, from_layer)
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    if lock_timeout_s is None:
        lock_timeout_s = float(os.environ.get("SYNIX_LOCK_TIMEOUT_S", "600"))
    with project_lock(paths.lock, timeout_s=lock_timeout_s):
        store = paths.open_store()
        llm_settings = {"cache_path": str(paths.llm_cache), "replay": replay, **(llm_config or {})}
        try:
            return _run(paths, pipeline, layers, store, llm_settings, full=full, batch=batch,
                        whole=select is None and from_layer is None, notify=notify, started=started)
        finally:
            store.close()


def _run(paths, pipeline, layers, store, llm_settings, *, full, batch, whole, notify, started) -> BuildReport:
    # The plain client decides the no-op case; Dagster is imported only when something is built.
    client = make_client(**llm_settings)
    run_id = uuid.uuid4().hex
    ctx = BuildContext(pipeline, store, client, paths, run_id=run_id, batch=batch)
    report = BuildReport(run_id, provider=ctx.llm_identity)
    scan = ctx.reader.scan()
    report.skipped_inputs = [{"file": f, "error": e} for f, e in scan.failed_files] + \
        [{"file": f, "conversation_id": c, "reason": r} for f, c, r in scan.skipped]
    fingerprint = _fingerprint(ctx, scan, layers)
    clean = not store.failures() and not scan.failed_files
    if whole and not full and clean and store.get_meta("build:fingerprint") == fingerprint:
        for layer in layers:
            n = len(store.current_index(layer))
            report.layers[layer] = {"built": 0, "cached": n, "failed": 0, "llm_calls": 0}
            notify(layer, "done", report.layers[layer])
        report.noop = True
        report.seconds = time.monotonic() - started
        client.close()
        return report

    client.close()
    store.start_run(pipeline.name, layers, run_id=run_id)
    instance = dagster_instance(paths)
    from synix_assets.dagster_defs.build import build_defs, resources_for
    from synix_resources.llm.resource import LLMResource

    llm_resource = LLMResource(**llm_settings)
    ctx.llm = llm_resource.get_client()
    defs = build_defs(paths.root, resources={**resources_for(paths), "llm": llm_resource})
    with progress.listening(lambda layer, n: notify(layer, "progress", {"done": n})):
        try:
            _build_layers(ctx, defs, instance, pipeline, layers, scan, run_id, batch, full, whole,
                          report, notify, store)
        finally:
            report.failures = [{"layer": f.layer, "group_key": f.group_key, "error": f.error}
                               for f in store.failures(run_id=run_id)] + report.failures
            status = "failed" if report.failures else "completed"
            report.seconds = time.monotonic() - started
            store.finish_run(run_id, status, {"layers": report.layers, "projections": report.projections,
                                              "seconds": round(report.seconds, 3),
                                              "llm_calls": int(report.total("llm_calls"))})
    if report.failures:
        first = report.failures[0]
        raise BuildFailed(
            f"{len(report.failures)} partition(s) failed, e.g. {first['layer']}/{first['group_key']}: "
            f"{first['error']}", hint="everything else was built and kept; `synix run` retries only "
                                      "the failed partitions", report=report)
    if whole and not scan.failed_files:
        store.set_meta("build:fingerprint", fingerprint)
    return report


def _build_layers(ctx, defs, instance, pipeline, layers, scan, run_id, batch, full, whole,
                  report, notify, store) -> None:
    """Each layer that has work in its own Dagster run; the projections (and a stale last
    unpartitioned layer) in one more."""
    from synix_assets.dagster_defs.partitions import partitions_for

    deferred = None
    for layer in layers:
        notify(layer, "start", {})
        if full:
            _forget_current(store, layer)
        plan = plan_layer(ctx, layer, scan, None)
        if not plan.stale and not plan.retire:
            report.layers[layer] = {"built": 0, "cached": len(plan.cached), "failed": 0,
                                    "blocked": len(plan.blocked), "llm_calls": 0}
            notify(layer, "done", report.layers[layer])
            continue
        notify(layer, "planned", {"stale": len(plan.stale), "cached": len(plan.cached)})
        if (whole and layer == layers[-1] and pipeline.projections
                and partitions_for(pipeline, layer) is None):
            deferred = (layer, plan)  # built in the projections' run: one Dagster run fewer
            continue
        launched = time.monotonic()
        dagster_run = _materialize_layer(defs, instance, pipeline, layer, plan, run_id, batch)
        report.dagster_runs.append(dagster_run)
        _collect(report, store, run_id, layer, plan, time.monotonic() - launched)
        notify(layer, "done", report.layers[layer])
    _run_projections(ctx, defs, instance, pipeline, run_id, report, notify, deferred, batch)


def _collect(report, store, run_id: str, layer: str, plan, wall: float) -> None:
    stats = (store.get_run(run_id).stats or {}).get("layers", {}).get(layer)
    report.layers[layer] = stats or {"built": 0, "cached": len(plan.cached), "failed": 0}
    # wall = the whole Dagster run; seconds (from the asset) = Synix's own build work
    report.layers[layer]["wall_seconds"] = round(wall, 3)


def _forget_current(store, layer: str) -> None:
    store.retire(layer, list(store.current_index(layer)))
    store.clear_checkpoints(layer)


def _materialize_layer(defs, instance, pipeline, layer: str, plan, run_id: str, batch: bool) -> str:
    import dagster as dg

    from synix_assets.dagster_defs.assets import (BATCH_TAG, EMIT_TAG, FULL_LAYER_TAG, RUN_ID_TAG,
                                                  layer_key)
    from synix_assets.dagster_defs.partitions import dynamic_name, partitions_for

    tags = {RUN_ID_TAG: run_id, EMIT_TAG: "changed", FULL_LAYER_TAG: "1"}
    if batch:
        tags[BATCH_TAG] = "1"
    part = partitions_for(pipeline, layer)
    if part is not None:
        keys = plan.stale_keys or plan.cached[:1] or plan.retire[:1]
        name = dynamic_name(pipeline, layer)
        if name:
            have = instance.get_dynamic_partitions(name)
            missing = [k for k in keys if k not in set(have)]
            if missing:
                instance.add_dynamic_partitions(name, missing)
            order = list(have) + missing
        else:
            order = list(part.get_partition_keys())
            keys = [k for k in keys if k in order] or order[:1]
        positions = sorted(order.index(k) for k in keys)
        tags["dagster/asset_partition_range_start"] = order[positions[0]]
        tags["dagster/asset_partition_range_end"] = order[positions[-1]]
    job_assets = list(defs.assets)
    result = dg.materialize(job_assets, selection=[layer_key(layer)], instance=instance,
                            resources=defs.resources, tags=tags, raise_on_error=False,
                            run_config=QUIET_LOGS)
    return result.run_id


def _run_projections(ctx, defs, instance, pipeline, run_id, report, notify, deferred, batch) -> None:
    """One run for the projections, led by the last layer when it is unpartitioned and stale."""
    import dagster as dg

    from synix_assets.dagster_defs.assets import (BATCH_TAG, EMIT_TAG, FULL_LAYER_TAG, RUN_ID_TAG,
                                                  layer_key)

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
    selection = [layer_key(n) for n in stale]
    tags = {RUN_ID_TAG: run_id, EMIT_TAG: "changed", FULL_LAYER_TAG: "1"}
    if batch:
        tags[BATCH_TAG] = "1"
    if deferred is not None:
        selection.insert(0, layer_key(deferred[0]))
    launched = time.monotonic()
    result = dg.materialize(list(defs.assets), selection=selection, instance=instance,
                            resources=defs.resources, raise_on_error=False, tags=tags,
                            run_config=QUIET_LOGS)
    report.dagster_runs.append(result.run_id)
    if deferred is not None:
        _collect(report, ctx.store, run_id, deferred[0], deferred[1], time.monotonic() - launched)
        notify(deferred[0], "done", report.layers[deferred[0]])
    written = {ev.asset_key for ev in result.get_asset_materialization_events()}
    for name in stale:
        report.projections[name] = {"changed": layer_key(name) in written}
    if not result.success:
        for ev in result.all_events:
            if ev.is_step_failure:
                report.failures.append({"layer": ev.step_key, "group_key": "-",
                                        "error": ev.event_specific_data.error.message.strip()[:300]})
    notify("projections", "done", report.projections)
