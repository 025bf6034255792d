"""Launching a Synix run's Dagster runs in this process and judging how each ended.

`LocalLauncher` runs one layer's job over the partition range covering its stale partitions (or
the projections' job), records each Dagster run id, and turns a run that did not finish into
KeyboardInterrupt (a signal) or LayerIncomplete (partitions neither built nor recorded as
failed). Each run carries the origin of its job in the project's code location
(dagster_defs/origin.py), so Dagster's UI lists it on the job page and re-executes it.
orchestration/remote.py submits the same runs to a distributed deployment instead.
"""
from __future__ import annotations

from synix_assets.dagster_defs.vocabulary import (BATCH_TAG, EMIT_TAG, FULL_LAYER_TAG, LAYER_TAG,
                                                 RUN_ID_TAG, TRIGGER_VERIFIED)
from synix_resources.process import interrupts
from synix_assets.engine.layers import plan_layer

# Dagster's console logger prints every failed step with its stack trace; the CLI reports the one
# line itself, and the full records stay in Dagster's run storage (the UI shows them). --debug
# restores them on the terminal.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
DEBUG_LOGS = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
# What Dagster's in-process executor reports for a step stopped by a signal.
INTERRUPT_ERRORS = {"KeyboardInterrupt", "DagsterExecutionInterruptedError"}


class LayerIncomplete(Exception):
    """A Dagster run ended without finishing a layer, and not because of recorded partition
    failures: nothing downstream may read the layer."""

    def __init__(self, layer: str, cause: str):
        self.layer = layer
        self.cause = cause
        super().__init__(f"{layer}: {cause}")


class LocalLauncher:
    """Launches the in-process Dagster runs of one Synix run and checks how each ended."""

    def __init__(self, ctx, scan, defs, instance, run_config: dict, dagster_runs: list[str], graph,
                 repository=None):
        self.ctx, self.scan, self.defs, self.instance = ctx, scan, defs, instance
        self.repository = repository  # the code location origin the runs are created with
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

    def restamp(self, pipeline, layer: str, plan) -> bool:
        """A layer with nothing to build whose Dagster record carries another code version (it
        was recorded as outdated, e.g. before its upstream was rebuilt with identical content):
        Synix just verified its current partitions, so record them again as current — all but
        the blocked ones, which stay outdated until the failure upstream of them is fixed.
        Returns whether anything was recorded."""
        from synix_assets.dagster_defs.records import record_current

        event = self.instance.get_latest_materialization_event(self.names.layer(layer))
        mat = event.asset_materialization if event is not None else None
        if mat is None or (mat.tags or {}).get("dagster/code_version") in (None, self.graph.versions[layer]):
            return False
        keys = sorted(set(self.ctx.store.current_index(layer)) - set(plan.blocked))
        return record_current(self.instance, pipeline, self.ctx.store, self.graph.versions, self.names,
                              {layer: keys}, [], TRIGGER_VERIFIED) > 0

    def report_check(self, layer: str, plan, *, after_restamp: bool) -> None:
        """The `synix_up_to_date` check of a layer not launched: its last evaluation may say
        something else (blocked or stale before a build that found nothing to do, e.g. a month
        rebuilt identical). Reported when its verdict changed, or after a restamp (Dagster ties
        an evaluation to the latest materialization, so the restamp left it "Not evaluated")."""
        from synix_assets.dagster_defs.checks import check_evaluation, report_if_changed

        evaluation = check_evaluation(self.ctx, layer, self.names.layer(layer), plan)
        if after_restamp:
            self.instance.report_runless_asset_event(evaluation)
        else:
            report_if_changed(self.instance, evaluation)

    def drop_partitions(self, pipeline, retired: dict[str, list[str]]) -> None:
        """Partitions of vanished groups (a deleted export's conversations, a month left empty)
        leave Dagster's partition sets once no layer sharing the set still holds them, so the UI
        does not keep showing them."""
        from synix_assets.dagster_defs.partitions import dynamic_name, named

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
            gone = [k for k in keys if k not in held]
            shown = self.ctx.store.partition_names(gone) if named(pipeline, layer) else {}
            for key in {shown.get(k, k) for k in gone}:
                if self.instance.has_dynamic_partition(name, key):
                    self.instance.delete_dynamic_partition(name, key)

    def layer(self, pipeline, layer: str, plan):
        """One run over the partition range covering the layer's stale partitions."""
        tags = {**self.tags(), LAYER_TAG: layer}
        keys = self.partition_keys(pipeline, layer, plan)
        order = self.partition_order(pipeline, layer, keys)
        if order is not None:
            tags.update(range_tags(order, keys))
        return self.run(pipeline, [layer], tags)

    def partition_keys(self, pipeline, layer: str, plan) -> list[str]:
        """The Dagster partition keys of the layer's run: its stale partitions (else one it holds,
        so a run that only retires still has a partition)."""
        from synix_assets.dagster_defs.partitions import partition_keys

        keys = plan.stale_keys or plan.cached[:1] or plan.retire[:1]
        return partition_keys(self.ctx.store, pipeline, layer, keys, plan)

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
        missing = sorted(set(keys) - known)  # in date order, as records.register_partitions adds them
        if missing:
            self.instance.add_dynamic_partitions(name, missing)
        return list(have) + missing

    def run(self, pipeline, names: list[str], tags: dict | None = None):
        """Materialize these layers/projections in one named run (`synix_build_<layer>`, or
        `synix_update_projections` for the projections and the layer they lead with); raises
        KeyboardInterrupt if a signal came meanwhile and LayerIncomplete if a step failed leaving
        partitions neither built nor recorded as failed."""
        from synix_assets.dagster_defs.jobs import PROJECTIONS_JOB, layer_job_name
        from synix_assets.dagster_defs.origin import execute_with_origin

        if len(names) == 1 and names[0] in pipeline.steps:
            job = self.defs.resolve_job_def(layer_job_name(names[0], self.names))
            selection, tags = None, tags or self.tags()
        else:
            job = self.defs.resolve_job_def(self.names.qualify(PROJECTIONS_JOB))
            selection = [self.names.layer(n) for n in names]
            tags = tags or {**self.tags(), LAYER_TAG: "projections"}
        result = execute_with_origin(job, self.instance, self.repository, run_config=self.run_config,
                                     tags=tags, asset_selection=selection)
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
                names = self.ctx.store.partition_names(left[:5])  # as Dagster shows them
                shown = ", ".join(names.get(k, k) for k in left[:5]) + \
                    (f" and {len(left) - 5} more" if len(left) > 5 else "")
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
