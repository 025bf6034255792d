"""`synix run`: build a project through Dagster, one single-run backfill per layer that changed.

The plan (Synix's materialization keys) decides which layers have work; for each, the stale
partitions are registered with Dagster and one in-process run materializes the range that covers
them. Layers with nothing to do launch nothing, and a build whose inputs, pipeline, projections
and model are all unchanged since the last clean build returns before loading Dagster at all.

A whole build whose layer steps execute in this process also starts the work graph
(engine/schedule.py): the layers are built overlapping, each partition as soon as its inputs are
stored, and each layer's Dagster run records what the graph built for it instead of building it.

A layer that does not finish stops the build before anything reads it: a signal (the build is
"interrupted", exit 128+signal), or an exception that is not a recorded partition failure (the
build fails naming the layer, its unfinished partitions and the cause). Partitions that failed on
their own (an LLM error, a prompt that raised) are recorded; what depends on them is blocked and
everything else is built. Either way the clean-build marker is not recorded, so the next
`synix run` plans again and resumes exactly what is left.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.vocabulary import (BATCH_TAG, BRANCH_TAG, EMIT_TAG,
                                                 FULL_LAYER_TAG, LAYER_TAG, RUN_ID_TAG, TRIGGER_CLI,
                                                 TRIGGER_TAG, TRIGGER_VERIFIED)
from synix_assets.engine import schedule
from synix_assets.engine.branches import drop_undeclared_layers, finish_pending_promote
from synix_assets.engine.context import BuildContext
from synix_assets.engine.dagster_runs import close_open_runs, settle_abandoned_runs
from synix_assets.engine.layers import CLEAN_BUILD_KEY, plan_layer, settle_failures
from synix_assets.engine.projections import outputs_exist, projection_stale
from synix_assets.forget import finish_pending_forget
from synix_assets.project import ProjectPaths
from synix_assets.scale.config import load_scale_config
from synix_resources.errors import BuildFailed, BuildInterrupted, PipelineDefinitionError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.llm.factory import make_client
from synix_resources.process import interrupts, progress
from synix_resources.process.locking import project_lock
from synix_resources.settings import settings

log = logging.getLogger("synix.run")
# Dagster's console logger prints every failed step with its stack trace; the CLI reports the one
# line itself, and the full records stay in Dagster's run storage (the UI shows them). --debug
# restores them on the terminal.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
DEBUG_LOGS = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
INTERRUPTED = "interrupted"
RESUME_HINT = "rerun `synix run` to resume"
# What Dagster's in-process executor reports for a step stopped by a signal.
INTERRUPT_ERRORS = {"KeyboardInterrupt", "DagsterExecutionInterruptedError"}


class LayerIncomplete(Exception):
    """A Dagster run ended without finishing a layer, and not because of recorded partition
    failures: nothing downstream may read the layer."""

    def __init__(self, layer: str, cause: str):
        self.layer = layer
        self.cause = cause
        super().__init__(f"{layer}: {cause}")


@dataclass
class BuildReport:
    run_id: str
    layers: dict[str, dict] = field(default_factory=dict)
    projections: dict[str, dict] = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)
    skipped_inputs: list[dict] = field(default_factory=list)
    dagster_runs: list[str] = field(default_factory=list)
    provider: str = ""
    branch: str = "main"
    seconds: float = 0.0
    noop: bool = False
    status: str = "completed"  # completed | failed | interrupted

    def total(self, key: str) -> float:
        return sum(v.get(key, 0) for v in self.layers.values())

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "branch": self.branch, "status": self.status,
                "layers": {k: {"built": v.get("built", 0), "cached": v.get("cached", 0),
                               "failed": v.get("failed", 0),
                               **({"unfinished": v["unfinished"]} if v.get("unfinished") else {})}
                           for k, v in self.layers.items()},
                "llm_calls": int(self.total("llm_calls")), "tokens_in": int(self.total("tokens_in")),
                "tokens_out": int(self.total("tokens_out")),
                "cost_usd": round(self.total("cost_usd"), 6), "seconds": round(self.seconds, 3),
                "provider": self.provider, "failures": self.failures,
                "projections": self.projections, "skipped_inputs": self.skipped_inputs}


def _fingerprint(ctx, scan, layers: list[str]) -> str:
    """Everything a whole build's result depends on: inputs, provider, each layer's version and
    each projection's full configuration (which layers it reads, embeddings, path, budget)."""
    # the declared output path (not the branch's copy of it), so a promoted branch's build is
    # main's clean build: the same inputs and steps give the same fingerprint on every branch
    projections = [canonical_json({**dataclasses.asdict(p), "path": str(ctx.pipeline.resolve(Path(p.path)))}
                                  if p.kind == "context_doc" else dataclasses.asdict(p))
                   for _, p in sorted(ctx.pipeline.projections.items())]
    parts = [scan.fingerprint, ctx.llm_identity,
             *(f"{l}:{ctx.version(l)}" for l in layers), *projections]
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
              progress: Callable[[str, str, dict], None] | None = None,
              dagster_logs: bool = False, instance=None, run_tags: dict | None = None) -> BuildReport:
    """Build the project. Raises BuildFailed (after storing everything that succeeded) if any
    partition or layer failed, and BuildInterrupted on SIGINT/SIGTERM (what finished is kept).
    `dagster_logs` shows Dagster's own error records (stack traces) on the terminal.
    `instance`/`run_tags`: the Dagster instance and extra run tags when the build runs inside a
    Dagster run (the `synix_build_all` job); else the project's own home."""
    started = time.monotonic()
    notify = progress or (lambda *a: None)
    with interrupts.watching():
        try:
            # an interrupted forget comes first (its rebuild is this function)
            finish_pending_forget(paths, llm_config=llm_config, rebuild=run_build)
            paths.state_dir.mkdir(parents=True, exist_ok=True)
            if lock_timeout_s is None:
                lock_timeout_s = settings().lock_timeout_s
            with project_lock(paths.lock, timeout_s=lock_timeout_s):
                finish_pending_promote(paths)  # an interrupted promote ends before main is read
                pipeline = paths.load_pipeline()
                layers = _selected_layers(pipeline, select, from_layer)
                store = paths.open_store()
                llm_settings = {"cache_path": str(paths.llm_cache), "replay": replay, **(llm_config or {})}
                try:
                    return _run(paths, pipeline, layers, store, llm_settings, full=full, batch=batch,
                                whole=select is None and from_layer is None, notify=notify,
                                started=started, run_config=DEBUG_LOGS if dagster_logs else QUIET_LOGS,
                                instance=instance, run_tags=run_tags)
                finally:
                    store.close()
        except KeyboardInterrupt:  # before any run was recorded: nothing to mark
            raise BuildInterrupted(INTERRUPTED, signal_number=interrupts.signal_number(),
                                   hint=RESUME_HINT) from None


def _run(paths, pipeline, layers, store, llm_settings, **options) -> BuildReport:
    # The Dagster instance and the LLM client a build opens are closed when it ends, however it
    # ends: a long-lived process (the server, the live worker, a test session) builds many times.
    with contextlib.ExitStack() as resources:
        return _run_in(resources, paths, pipeline, layers, store, llm_settings, **options)


def _run_in(resources, paths, pipeline, layers, store, llm_settings, *, full, batch, whole, notify,
            started, run_config, instance=None, run_tags=None) -> BuildReport:
    # The plain client decides the no-op case; Dagster is imported only when something is built.
    client = make_client(**llm_settings)
    run_id = uuid.uuid4().hex
    ctx = BuildContext(pipeline, store, client, paths, run_id=run_id, batch=batch)
    report = BuildReport(run_id, provider=ctx.llm_identity, branch=paths.branch)
    scan = ctx.reader.scan()
    report.skipped_inputs = [{"file": f, "error": e} for f, e in scan.failed_files] + \
        [{"file": f, "conversation_id": c, "reason": r} for f, c, r in scan.skipped]
    fingerprint = _fingerprint(ctx, scan, layers)
    if whole:  # a branch whose pipeline dropped a layer stops pointing at it
        drop_undeclared_layers(store, pipeline)
    # before anything is planned or built: a failure whose partition is current again, or whose
    # input is gone, must block nothing (nor keep this build from being a no-op)
    settle_failures(ctx, scan)
    clean = not store.failures() and not scan.failed_files and outputs_exist(ctx)
    if whole and not full and clean and store.get_meta(CLEAN_BUILD_KEY) == fingerprint:
        for layer in layers:
            n = store.current_count(layer)
            report.layers[layer] = {"built": 0, "cached": n, "failed": 0, "llm_calls": 0}
            notify(layer, "done", report.layers[layer])
        report.noop = True
        report.seconds = time.monotonic() - started
        client.close()
        return report

    resources.callback(client.close)  # the build's client: the work graph's calls go through it
    settle_abandoned_runs(paths, store)  # a killed earlier build must not stay "running"
    store.start_run(pipeline.name, layers, run_id=run_id)
    store.delete_meta(CLEAN_BUILD_KEY)  # recorded again only if this build finishes
    # tags of every Dagster run this build launches (trigger/branch; the layer is added per run)
    ctx.run_tags = {TRIGGER_TAG: TRIGGER_CLI, BRANCH_TAG: paths.branch, **(run_tags or {})}
    work = None
    try:
        scale = load_scale_config(paths.root)
        with progress.listening(lambda layer, n: notify(layer, "progress", {"done": n})):
            # A whole build overlaps its layers in a work graph (engine/schedule.py), started
            # before Dagster is even imported, so the first LLM calls go out while it loads. Not
            # on a distributed deployment: its workers build the layers, and a step there cannot
            # take this process's results.
            if whole and not full and scale is None and schedule.usable(ctx, layers):
                work = schedule.WorkGraph(ctx, layers, scan).start()
            try:
                instance = instance or resources.enter_context(dagster_instance(paths))
                # the definitions bring Dagster in step with the store, leaving what this build
                # stores meanwhile to its own runs
                launch = _launcher(paths, ctx, scan, instance, run_config, report, llm_settings, scale)
                _build_layers(ctx, launch, pipeline, layers, scan, full, whole, report, notify,
                              store, work)
            finally:
                if work is not None:
                    work.stop()
    except KeyboardInterrupt:
        report.status = INTERRUPTED
    except LayerIncomplete as exc:
        report.status = "failed"
        report.failures.append({"layer": exc.layer, "group_key": "*", "error": exc.cause})
    except BaseException as exc:  # recorded on the run, then raised as it came
        _finish(ctx, instance, report, started, "failed", f"{type(exc).__name__}: {exc}")
        raise
    report.failures = [{"layer": f.layer, "group_key": f.group_key, "error": f.error}
                       for f in store.failures(run_id=run_id)] + report.failures
    blocked = {l: v["blocked"] for l, v in report.layers.items() if v.get("blocked")}
    if report.status == "completed" and not report.failures and blocked:
        # blocked by failures this build did not retry (a layer above was not selected): the
        # memory is not complete, so the build is no success either
        report.failures = [{"layer": f.layer, "group_key": f.group_key, "error": f.error,
                            "recorded_in": f.run_id} for f in store.failures()]
    if report.status == "completed" and report.failures:
        report.status = "failed"
    _finish(ctx, instance, report, started, report.status, None)
    if report.status == INTERRUPTED:
        raise BuildInterrupted(INTERRUPTED, signal_number=interrupts.signal_number(),
                               hint=RESUME_HINT, report=report)
    if report.failures:
        raise BuildFailed(_failure_line(report.failures, blocked), hint=_failure_hint(report.failures),
                          report=report)
    if whole and not scan.failed_files:
        store.set_meta(CLEAN_BUILD_KEY, fingerprint)
    return report


def _launcher(paths, ctx, scan, instance, run_config, report, llm_settings, scale):
    """What launches this build's Dagster runs: in this process, or on the deployment that
    scale.toml names (docs/scale.md)."""
    from synix_assets.dagster_defs.build import branch_graph, build_defs, resources_for
    from synix_resources.llm.resource import LLMResource

    # the steps of this build's runs get a resource with the same settings as the build's client
    llm_resource = LLMResource(**llm_settings)
    # only this branch's graph: its assets and jobs (main's and other branches' stay untouched)
    defs = build_defs(paths.root, resources={**resources_for(paths), "llm": llm_resource},
                      branches=[paths.branch], building_run=ctx.run_id)
    graph = branch_graph(paths, ctx.llm_identity, None)
    if scale is None:
        return _Launcher(ctx, scan, defs, instance, run_config, report.dagster_runs, graph)
    from synix_assets.scale.launcher import RemoteLauncher

    return RemoteLauncher(scale, ctx, scan, defs, instance, run_config, report.dagster_runs, graph)


def _finish(ctx, instance, report, started, status: str, error: str | None) -> None:
    """Record how the run ended; a run that did not complete leaves no Dagster run open."""
    report.seconds = time.monotonic() - started
    stats = {"layers": report.layers, "projections": report.projections,
             "seconds": round(report.seconds, 3), "llm_calls": int(report.total("llm_calls"))}
    if error:
        stats["error"] = error
    ctx.store.finish_run(ctx.run_id, status, stats)
    if status != "completed" and instance is not None:
        close_open_runs(instance, ctx.run_id, outcome=status, cancel=status == INTERRUPTED,
                        message=f"Synix run {ctx.run_id} {status}" + (f": {error}" if error else ""))


def _failure_line(failures: list[dict], blocked: dict[str, int] | None = None) -> str:
    whole = [f for f in failures if f["group_key"] == "*"]
    if whole:
        return f"{whole[0]['layer']} did not finish: {whole[0]['error']}"
    first = failures[0]
    names = ", ".join(f"{f['layer']}/{f['group_key']}" for f in failures[:5])
    more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
    held = ", ".join(f"{layer} ({n})" for layer, n in (blocked or {}).items())
    if all("recorded_in" in f for f in failures):  # none failed in this build
        return (f"blocked: {held} wait(s) for {len(failures)} partition(s) that failed in an "
                f"earlier build ({names}{more}); first error: "
                f"{first['layer']}/{first['group_key']}: {first['error']}")
    return (f"{len(failures)} partition(s) failed ({names}{more})"
            + (f", blocking {held}" if held else "") + "; first error: "
            f"{first['layer']}/{first['group_key']}: {first['error']}")


def _failure_hint(failures: list[dict]) -> str:
    if any(f["group_key"] == "*" for f in failures):
        return ("what finished was kept and nothing downstream was built from the rest; fix the "
                "cause and `synix run` builds the unfinished partitions")
    if all("recorded_in" in f for f in failures):
        return ("fix the cause, then run the whole build (`synix run`, no --select/--from): it "
                "retries the failed partitions and builds what they block")
    return "everything else was built and kept; `synix run` retries only the failed partitions"


def _build_layers(ctx, launch, pipeline, layers, scan, full, whole, report, notify, store, graph) -> None:
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
            _forget_current(store, layer)
        plan = plan_layer(ctx, layer, scan, None) if graph is None else _graph_plan(graph.plans[layer])
        leads = (whole and layer == layers[-1] and pipeline.projections
                 and partitions_for(pipeline, layer) is None)
        # A layer planned before its inputs existed is launched with what the graph did: with
        # nothing planned it may have found work (topics="auto"), and the layer that leads the
        # projections' run must not be launched without work (its empty output would make
        # Dagster skip the projections after it).
        if graph is not None and (leads or (not plan.stale and not plan.retire)):
            plan = _found_by_graph(graph, layer, plan)
        if not plan.stale and not plan.retire:
            launch.restamp(pipeline, layer)
            if plan.blocked:
                launch.report_blocked(layer, plan)
            report.layers[layer] = {"built": 0, "cached": len(plan.cached), "failed": 0,
                                    "blocked": len(plan.blocked), "llm_calls": 0}
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
            _collect(report, ctx, layer, plan, scan, time.monotonic() - launched)
        notify(layer, "done", report.layers[layer])
    launch.drop_partitions(pipeline, retired)
    _run_projections(ctx, launch, pipeline, report, notify, deferred, scan)


def _graph_plan(plan):
    """The plan a layer is launched with while the work graph builds it: planned before any layer
    was built, so a partition blocked by an upstream failure may be built after all (the upstream
    partition is retried in this build) and is launched as stale."""
    from synix_assets.engine.outcomes import WorkItem

    return dataclasses.replace(plan, stale=plan.stale + [WorkItem(k, None, "upstream retried")
                                                         for k in plan.blocked], blocked=[])


def _found_by_graph(graph, layer: str, plan):
    """The launch plan of a layer, once the graph finished it: what the graph built (or failed)
    is its work, what it found blocked stays blocked."""
    from synix_assets.engine.outcomes import WorkItem

    try:
        result = graph.wait(layer)
    except Exception as exc:  # the layer did not finish: nothing downstream may read it
        raise LayerIncomplete(layer, f"{type(exc).__name__}: {exc}") from exc
    keys = [o.group_key for o in result.outcomes if o.status in ("built", "failed")]
    return dataclasses.replace(plan, stale=[WorkItem(k, None, "found by the build") for k in keys],
                               blocked=[o.group_key for o in result.outcomes if o.status == "blocked"])


def _collect(report, ctx, layer: str, plan, scan, wall: float) -> None:
    stats = (ctx.store.get_run(ctx.run_id).stats or {}).get("layers", {}).get(layer)
    if stats is None:  # the layer's step never got to record its totals: count what it stored
        left = plan_layer(ctx, layer, scan, None)
        stats = {"built": ctx.store.built_in_run(ctx.run_id).get(layer, 0),
                 "cached": len(plan.cached), "failed": 0, "unfinished": len(left.stale),
                 "unfinished_keys": left.stale_keys[:20]}
    report.layers[layer] = stats
    # wall = the whole Dagster run; seconds (from the asset) = Synix's own build work
    report.layers[layer]["wall_seconds"] = round(wall, 3)


def _forget_current(store, layer: str) -> None:
    store.retire(layer, list(store.current_index(layer)))
    store.clear_checkpoints(layer)


class _Launcher:
    """Launches the in-process Dagster runs of one Synix run and checks how each ended."""

    def __init__(self, ctx, scan, defs, instance, run_config: dict, dagster_runs: list[str], graph):
        self.ctx, self.scan, self.defs, self.instance = ctx, scan, defs, instance
        self.graph = graph
        self.names = graph.names  # this branch's asset keys, partition sets and job names
        self.run_config = run_config
        self.dagster_runs = dagster_runs

    def tags(self) -> dict[str, str]:
        tags = {**self.ctx.run_tags, RUN_ID_TAG: self.ctx.run_id, EMIT_TAG: "changed",
                FULL_LAYER_TAG: "1"}
        if self.ctx.batch:
            tags[BATCH_TAG] = "1"
        return tags

    def restamp(self, pipeline, layer: str) -> None:
        """A layer with nothing to build whose Dagster record carries another code version (it
        was recorded as outdated, e.g. before its upstream was rebuilt with identical content):
        Synix just verified every current partition, so record them again as current."""
        from synix_assets.dagster_defs.records import record_current

        event = self.instance.get_latest_materialization_event(self.names.layer(layer))
        mat = event.asset_materialization if event is not None else None
        if mat is None or (mat.tags or {}).get("dagster/code_version") in (None, self.graph.versions[layer]):
            return
        keys = sorted(self.ctx.store.current_index(layer))
        record_current(self.instance, pipeline, self.ctx.store, self.graph.versions, self.names,
                       {layer: keys}, [], TRIGGER_VERIFIED)

    def report_blocked(self, layer: str, plan) -> None:
        """The `synix_up_to_date` check of a layer not launched because what it would build is
        blocked by failures: its last evaluation, from before them, would show it up to date."""
        from synix_assets.dagster_defs.checks import check_evaluation

        self.instance.report_runless_asset_event(check_evaluation(layer, self.names.layer(layer), plan))

    def drop_partitions(self, pipeline, retired: dict[str, list[str]]) -> None:
        """Partitions of vanished groups (a deleted export's conversations, a month left empty)
        leave Dagster's partition sets once no layer sharing the set still holds them, so the UI
        does not keep showing them."""
        from synix_assets.dagster_defs.partitions import dynamic_name

        sets: dict[str, list[str]] = {}
        for layer in pipeline.layer_order():
            name = dynamic_name(pipeline, layer, self.names)
            if name:
                sets.setdefault(name, []).append(layer)
        for layer, keys in retired.items():
            name = dynamic_name(pipeline, layer, self.names)
            if not name:
                continue
            held = {k for l in sets[name] for k in self.ctx.store.current_index(l)}
            for key in keys:
                if key not in held and self.instance.has_dynamic_partition(name, key):
                    self.instance.delete_dynamic_partition(name, key)

    def layer(self, pipeline, layer: str, plan):
        """One run over the partition range covering the layer's stale partitions."""
        tags = {**self.tags(), LAYER_TAG: layer}
        keys = plan.stale_keys or plan.cached[:1] or plan.retire[:1]
        order = self.partition_order(pipeline, layer, keys)
        if order is not None:
            tags.update(range_tags(order, keys))
        return self.run(pipeline, [layer], tags)

    def partition_order(self, pipeline, layer: str, keys: list[str]) -> list[str] | None:
        """The layer's partition keys in Dagster's order, after registering those of `keys` its
        dynamic partitions lack; None for an unpartitioned layer."""
        from synix_assets.dagster_defs.partitions import dynamic_name, partitions_for

        part = partitions_for(pipeline, layer, self.names)
        if part is None:
            return None
        name = dynamic_name(pipeline, layer, self.names)
        if not name:
            return list(part.get_partition_keys())
        have = self.instance.get_dynamic_partitions(name)
        known = set(have)
        missing = [k for k in keys if k not in known]
        if missing:
            self.instance.add_dynamic_partitions(name, missing)
        return list(have) + missing

    def run(self, pipeline, names: list[str], tags: dict | None = None):
        """Materialize these layers/projections in one named run (`synix_build_<layer>`, or
        `synix_update_projections` for the projections and the layer they lead with); raises
        KeyboardInterrupt if a signal came meanwhile and LayerIncomplete if a step failed leaving
        partitions neither built nor recorded as failed."""
        from synix_assets.dagster_defs.jobs import PROJECTIONS_JOB, layer_job_name

        if len(names) == 1 and names[0] in pipeline.steps:
            job = self.defs.resolve_job_def(layer_job_name(names[0], self.names))
            result = job.execute_in_process(instance=self.instance, tags=tags or self.tags(),
                                            raise_on_error=False, run_config=self.run_config)
        else:
            job = self.defs.resolve_job_def(self.names.qualify(PROJECTIONS_JOB))
            result = job.execute_in_process(
                instance=self.instance, asset_selection=[self.names.layer(n) for n in names],
                tags=tags or {**self.tags(), LAYER_TAG: "projections"}, raise_on_error=False,
                run_config=self.run_config)
        self.dagster_runs.append(result.run_id)
        # Dagster swallows a signal that lands between its steps
        interrupts.raise_if_received()
        if not result.success:
            self._check_failures(pipeline, result, names)
        return result

    def _check_failures(self, pipeline, result, names: list[str]) -> None:
        by_step = {self.names.layer(n).to_python_identifier(): n for n in names}
        for event in result.all_events:
            if not event.is_step_failure:
                continue
            name = by_step.get(event.step_key, event.step_key)
            error = event.event_specific_data.error
            if error is not None and error.cls_name in INTERRUPT_ERRORS:
                raise KeyboardInterrupt
            cause = _cause(error) if error is not None else "its step failed"
            if name not in pipeline.steps:  # a projection
                raise LayerIncomplete(name, cause)
            # A layer finished when every partition it had to build was built or recorded as
            # failed (downstream then blocks per partition); anything else left is unfinished.
            failed = {f.group_key for f in self.ctx.store.failures(layer=name, run_id=self.ctx.run_id)}
            left = [k for k in plan_layer(self.ctx, name, self.scan, None).stale_keys if k not in failed]
            if left:
                shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
                raise LayerIncomplete(name, f"{cause} ({len(left)} partition(s) not built: {shown})")


def range_tags(order: list[str], keys: list[str]) -> dict[str, str]:
    """Dagster's run tags for the partition range from the first to the last of `keys` in
    `order` (keys not in it are ignored; none left: the first partition)."""
    where = {k: i for i, k in enumerate(order)}
    positions = sorted(where[k] for k in keys if k in where) or [0]
    return {"dagster/asset_partition_range_start": order[positions[0]],
            "dagster/asset_partition_range_end": order[positions[-1]]}


def _cause(error) -> str:
    """The innermost exception of a Dagster error record, as one line."""
    while error.cause is not None:
        error = error.cause
    text = " ".join(error.message.split())
    head, sep, rest = text.partition(f"{error.cls_name}: ")
    if sep and (not head or head.endswith(".")):  # "pkg.module.Error: msg" → "Error: msg"
        return f"{error.cls_name}: {rest}"
    return f"{error.cls_name}: {text}"


def _run_projections(ctx, launch, pipeline, report, notify, deferred, scan) -> None:
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
        result = launch.run(pipeline, names)
    finally:
        if deferred is not None:
            _collect(report, ctx, deferred[0], deferred[1], scan, time.monotonic() - launched)
            notify(deferred[0], "done", report.layers[deferred[0]])
    # each projection records whether it rewrote its file/index in its `changed` metadata
    written = {ev.asset_key for ev in result.get_asset_materialization_events()
               if ev.materialization.metadata.get("changed", MetadataValue.bool(True)).value}
    for name in stale:
        report.projections[name] = {"changed": launch.names.layer(name) in written}
    notify("projections", "done", report.projections)
