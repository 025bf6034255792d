"""One Dagster asset per layer and per projection, compiled from a Pipeline.

Synix's materialization keys decide what is rebuilt; Dagster runs, records and displays. Every
asset body calls the same per-layer engine code whoever launched the run (`synix run`, the UI,
`dagster asset materialize`, the export sensor's build job), and records:

- one materialization per partition, with that partition's own metadata (artifact, title, date,
  preview, model; token usage and cost under `<provider>.…` names, `usage.py`) and Dagster's
  provenance tags (`records.Provenance`), so Dagster's stale/unsynced view agrees with `synix plan`.
  Runs launched by `synix run` (tag `synix/emit`) record only the partitions they rebuilt — a
  no-op records nothing — plus every partition of a layer whose code version changed without its
  content changing, so none is left "stale";
- the `synix_up_to_date` check result (what `synix plan` would still rebuild in this layer),
  emitted by the asset itself after every build, so it never shows "Not evaluated". A chunk of a
  distributed `synix run` reports it for its own partitions and its coordinator for the whole
  layer once, after the last chunk (the whole plan in every chunk would be quadratic);
- a failed step when any partition failed: Dagster then marks exactly the partitions it did not
  record as failed (the cached ones of the request are recorded so they are not).
"""

import contextlib

import dagster as dg

from synix_assets.dagster_defs.automation import automates_all, when_inputs_change
from synix_assets.dagster_defs.checks import check_evaluation, check_result, report_if_changed, says_blocked
from synix_assets.dagster_defs.jobs import BuildFn, whole_build
from synix_assets.dagster_defs.executor import backfill_policy
from synix_assets.dagster_defs.graph import MAIN_NAMES, Names, dagster_name, layer_key, parents, source_key
from synix_assets.dagster_defs.partitions import group_keys, named, partition_names, partitions_for
from synix_assets.dagster_defs.records import Provenance, artifact_metadata, data_version
from synix_assets.dagster_defs.usage import outcome_usage
from synix_assets.dagster_defs.vocabulary import (AUTOMATION_SENSOR_PREFIX, BACKFILL_TAG, BATCH_TAG, BRANCH_TAG, CHECK_NAME, DISTRIBUTED_TAG,
                                                 EMIT_TAG, FULL_LAYER_TAG, GROUP, KIND_KEY,
                                                 LAYER_JOB_PREFIX, LEVEL_KEY, PARTITIONING_KEY,
                                                 QUALIFIER, RUN_ID_TAG, SENSOR_TAG,
                                                 SOURCES_GROUP, STATUS_KEY)
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import build_layer, is_source_merge, plan_all, plan_layer, settle_failures
from synix_assets.engine.projections import run_projection
from synix_assets.engine.schedule import WorkGraph
from synix_assets.engine.streamed import StreamedBuild
from synix_assets.pipeline.prompts import prompt_identity
from synix_resources.llm.resource import LLMResource
from synix_resources.process.locking import project_lock
from synix_resources.settings import settings
from synix_resources.store.resource import ArtifactStoreResource

RECORD_BATCH = 200  # artifacts read (with their contents) per batch of materialization events

__all__ = ["layer_asset", "projection_asset", "source_specs", "layer_key", "source_key",
           "dagster_name", "RUN_ID_TAG", "EMIT_TAG", "FULL_LAYER_TAG", "BATCH_TAG", "DISTRIBUTED_TAG",
           "GROUP"]


def owners(pipeline) -> list[str]:
    team = "".join(c if c.isalnum() else "_" for c in (pipeline.agent or pipeline.name or "synix"))
    return [f"team:{team}"]


def _context(pipeline, paths, context, store: ArtifactStoreResource, llm: LLMResource) -> BuildContext:
    tags = context.run.tags if context.run else {}
    # A re-execution from the UI inherits the Synix run id of the run it repeats, which has
    # ended: it is a Synix run of its own, recorded under its own Dagster run id.
    run_id = context.run.run_id if context.run.parent_run_id else tags.get(RUN_ID_TAG) or context.run.run_id
    # one store resource serves every branch; each asset reads and moves its own branch's pointers
    return BuildContext(pipeline, store.get_store().on_branch(paths.branch), llm.get_client(), paths,
                        run_id=run_id,
                        batch=tags.get(BATCH_TAG) == "1")


def _same_model(used: str, identity: str, layer: str) -> None:
    """The code versions Dagster shows were computed for `identity` (the provider and model the
    environment named when the definitions loaded). A run whose `llm` config names another (an
    override in the Launchpad) would record output of that model as current for this one, and
    Dagster would call fresh what `synix plan` calls stale; so it is refused."""
    if used != identity:
        raise dg.Failure(description=(
            f"{layer}: this run's llm config uses {used}, but the definitions were versioned for "
            f"{identity}; set SYNIX_LLM_PROVIDER / SYNIX_LLM_MODEL (or ANTHROPIC_API_KEY) in the "
            f"environment and reload definitions instead of overriding `llm` in the Launchpad"))


def _outcome_metadata(outcome) -> dict:
    # "hit": the record was current, nothing done; "response cache": built anew from answers the
    # LLM response cache served (no model call); "built": the model was called
    cache = ("hit" if outcome.status == "cached"
             else "response cache" if outcome.from_response_cache else "built")
    # token usage and cost (only when a model was called) under Dagster's integrations' names
    md = {STATUS_KEY: outcome.status, "cache": cache, "from_response_cache": outcome.from_response_cache,
          "provider": outcome.provider, "model": outcome.model, **outcome_usage(outcome),
          "input_count": outcome.input_count}
    if outcome.provider == "extractive":
        md["note"] = "extractive summary (selected sentences, no LLM)"
    if outcome.reason:
        md["reason"] = outcome.reason
    return md


def describe(pipeline, layer: str, identity: str) -> str:
    """Step kind, inputs, partitioning, prompt and model: what a person needs to know in the UI."""
    step = pipeline.steps[layer]
    lines = [step.description] if step.description else []
    grouping = pipeline.partitioning(layer)
    per = "not partitioned (one artifact)" if grouping == "single" else f"one partition per {grouping}"
    lines.append(f"Synix {step.kind} step (level {pipeline.level(layer)}) reading "
                 f"{', '.join(step.from_)}; {per}.")
    if step.kind != "merge":
        prompt = getattr(step.prompt, "__name__", None) or type(step.prompt).__name__
        settings = pipeline.llm_settings(step)
        lines.append(f"Prompt: `{prompt}` ({prompt_identity(step.prompt)[:24]}). "
                     f"Model: {settings['model'] or 'provider default'} via {identity}.")
    return "\n\n".join(lines)


def _build_lock(paths, context):
    """The project's build lock; a distributed `synix run` holds it for every run it submits, so
    their steps, spread over many workers, must not wait on it nor on one another."""
    if context.run.tags.get(DISTRIBUTED_TAG) == "1":
        return contextlib.nullcontext()
    return project_lock(paths.lock, timeout_s=settings().lock_timeout_s)


def _children(pipeline, name: str, names: Names) -> set[dg.AssetKey]:
    nodes = [*pipeline.steps, *pipeline.projections]
    return {names.layer(n) for n in nodes if any(p.name == name for p in parents(pipeline, n, names))}


def _feeds_this_run(context, children: set[dg.AssetKey]) -> bool:
    """True when an asset downstream of this one runs later in the same run: it waits for this
    step's output, so the step must produce one."""
    if context.run.job_name.rpartition(QUALIFIER)[2].startswith(LAYER_JOB_PREFIX):
        return False  # a per-layer job (of any branch): nothing else runs after this step
    selected = context.run.asset_selection  # empty for some ad-hoc runs: assume a chain
    return not selected or bool(children & set(selected))


def _recorded_code_version(instance, key: dg.AssetKey) -> str | None:
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None
    # runless events (e.g. what forget restores) carry no tags at all
    return (event.asset_materialization.tags or {}).get("dagster/code_version")


def _failure(ctx, layer: str, result) -> dg.Failure:
    failed = result.failed
    # the partition keys Dagster shows (a conversation's readable key, not its export id), as
    # the parent run and `synix run` name them
    shown = partition_names(ctx.store, ctx.pipeline, layer, [o.group_key for o in failed])
    names = ", ".join(shown[o.group_key] for o in failed[:10]) + (" …" if len(failed) > 10 else "")

    def error(o) -> str:  # an LLM error names its request's label, `<layer>/<group key>`
        return (o.error or "").replace(f"{layer}/{o.group_key}", f"{layer}/{shown[o.group_key]}")
    return dg.Failure(
        description=f"{layer}: {len(failed)} partition(s) failed: {names}. "
                    f"First error: {error(failed[0])}. Other partitions were kept; "
                    f"a rerun retries only the failed ones.",
        metadata={"failed": [shown[o.group_key] for o in failed],
                  # every failure permanent: the live sensor dead-letters the batch at once
                  "permanent": all("permanent" in o.flags for o in failed),
                  "errors": dg.MetadataValue.json({shown[o.group_key]: error(o) for o in failed})})


def _nothing_behind(ctx, layer: str, part, asked: dict[str, str] | None, result, scan) -> str | None:
    """One line for the asked partitions the build had nothing for (no outcome at all: a key
    added by hand in the UI, or a conversation whose export is gone), else None. Succeeding would
    record nothing, and the partition would stay Missing however often it is materialized.
    A declared topic nothing matches is not one of them: `_empty_topics` records it."""
    if asked is None or isinstance(part, dg.StaticPartitionsDefinition):
        return None
    empty = sorted(set(asked) - {o.group_key for o in result.outcomes})
    if not empty:
        return None
    inputs = " and ".join(ctx.pipeline.steps[layer].from_)
    if not named(ctx.pipeline, layer):
        return (f"{layer}: nothing to build for partition(s) {_listed(asked, empty)}: no partition "
                f"of {inputs} in the store falls in it (added by hand?); delete it (the asset's "
                f"Partitions tab, \"Delete partitions\") or build {inputs} first")
    conversations = {s.key for s in (scan if scan is not None else ctx.reader.scan()).summaries}
    unknown = [k for k in empty if k not in conversations]
    if unknown:
        return (f"{layer}: nothing to build for partition(s) {_listed(asked, unknown)}: no "
                f"conversation in the exports has this key (added by hand, or its export was "
                f"removed); delete it (the asset's Partitions tab, \"Delete partitions\") — "
                f"`synix plan` lists what the exports hold")
    return (f"{layer}: nothing to build for partition(s) {_listed(asked, empty)} yet: its input "
            f"{inputs} is not built; materialize {inputs} for it first (or run synix_build_all)")


def _listed(asked: dict[str, str], keys: list[str]) -> str:
    return ", ".join(asked[k] for k in keys[:10]) + (" …" if len(keys) > 10 else "")


def _ensure_run(ctx, pipeline, layer: str, context) -> bool:
    """Runs launched from the UI/CLI/sensor get a Synix run record too; True if this asset owns it."""
    if ctx.store.get_run(ctx.run_id) is not None:
        return False
    ctx.store.start_run(pipeline.name, [layer], run_id=ctx.run_id, dagster_run_id=context.run.run_id)
    return True


def layer_asset(pipeline, paths, layer: str, versions: dict[str, str], identity: str,
                names: Names = MAIN_NAMES, work: WorkGraph | None = None,
                build: BuildFn | None = None) -> dg.AssetsDefinition:
    """`work`: the work graph of the `synix run` that compiled these definitions for itself; a
    step of one of that build's runs records what the graph built instead of building.
    `build`: the whole build (`synix run`'s, as `synix_build_all` calls it), which the first step
    of a UI backfill of the whole memory runs (`_leads_backfill`)."""
    step = pipeline.steps[layer]
    part = partitions_for(pipeline, layer, names)
    key = names.layer(layer)
    deps = [dg.AssetDep(p.key, partition_mapping=dg.AllPartitionMapping()) if p.kind == "fan_in"
            else dg.AssetDep(p.key) for p in parents(pipeline, layer, names)]
    children = _children(pipeline, layer, names)
    fan_in = any(p.kind == "fan_in" for p in parents(pipeline, layer, names))
    version = versions[layer]

    check = dg.AssetCheckSpec(CHECK_NAME, asset=key, description=(
        "Partitions whose Synix materialization key changed (what `synix plan` would rebuild), "
        "evaluated by every build of this layer; run it alone to re-evaluate it now."))

    # A multi-asset of one asset only for `can_subset`: the up-to-date check can then be run on
    # its own (the UI's "Execute" on the check), without building the layer.
    @dg.multi_asset(
        name=key.to_python_identifier(), can_subset=True, partitions_def=part,
        backfill_policy=backfill_policy(paths.root) if part is not None else None,
        check_specs=[check],
        specs=[dg.AssetSpec(key, deps=deps, group_name=names.group(GROUP), code_version=version,
                            description=describe(pipeline, layer, identity), skippable=True,
                            owners=owners(pipeline), kinds={"synix", step.kind},
                            automation_condition=when_inputs_change(
                                [p.key for p in parents(pipeline, layer, names) if p.kind == "same"]),
                            metadata={LEVEL_KEY: pipeline.level(layer), KIND_KEY: step.kind,
                                      PARTITIONING_KEY: pipeline.partitioning(layer)},
                            tags={LEVEL_KEY: str(pipeline.level(layer)), BRANCH_TAG: names.branch})])
    def _layer(context: dg.AssetExecutionContext, store: ArtifactStoreResource, llm: LLMResource):
        if key not in context.selected_asset_keys:  # the check alone: plan, build nothing
            yield _check_now(context, store, llm)
            return
        leads = _leads_build(context, pipeline, layer, names, part) if build is not None else None
        if leads is not None:
            # before the lock: the build takes it, and launches its layer runs in this process
            tags = {BACKFILL_TAG: context.run.tags[BACKFILL_TAG]} if leads == "backfill" else {}
            report = whole_build(context, llm, paths, names, build, tags)
            context.log.info(f"whole memory built for this {leads} as `synix run` builds it: "
                             f"{report.to_json()['layers']} (runs {', '.join(report.dagster_runs)})")
        # Sensor- and UI-launched runs wait for a CLI build of the same project (and vice versa).
        with _build_lock(paths, context):
            # after an automation's whole build this step records only what it builds itself:
            # its layer run recorded the rest, and recording it again, later, would read to the
            # conditions below as an input updated after them
            yield from _build(context, store, llm, changed_only=leads == "automation")

    def _check_now(context, store, llm) -> dg.AssetCheckResult:
        ctx = _context(pipeline, paths, context, store, llm)
        return check_result(ctx, layer, plan_all(ctx, ctx.reader.scan(), upto=layer)[layer])

    def _build(context, store, llm, changed_only: bool = False):
        ctx = _context(pipeline, paths, context, store, llm)
        _same_model(ctx.llm_identity, identity, layer)
        owned = _ensure_run(ctx, pipeline, layer, context)
        tags = context.run.tags
        full = tags.get(FULL_LAYER_TAG) == "1"
        # group key → the Dagster partition key it was asked for by
        asked = None if (part is None or full) else \
            dict(zip(group_keys(ctx.store, pipeline, layer, context.partition_keys), context.partition_keys))
        keys = None if asked is None else set(asked)
        # One chunk of a distributed layer (docs/scale.md): it plans only its own partitions,
        # and its coordinator evaluates the layer's check once, after the last chunk.
        chunk = tags.get(DISTRIBUTED_TAG) == "1" and keys is not None
        scan = ctx.reader.scan() if is_source_merge(pipeline, layer) else None
        prov = Provenance(pipeline, ctx.store, layer, version, context.instance, names)  # cursors before building
        restamp = _recorded_code_version(context.instance, key) not in (None, version)
        # A `synix run` work graph builds the layer meanwhile (engine/schedule.py): each partition
        # it stores is recorded at once, then the step takes the layer's result.
        graph = work if work is not None and work.builds(ctx.run_id, layer) else None
        streamed = set()
        for outcome in graph.arrivals(layer) if graph is not None else ():
            streamed.add(outcome.group_key)
            yield from _partitions(ctx, layer, [outcome], prov, key)
        result = graph.wait(layer) if graph is not None else None
        if result is None:
            if ctx.store.failures():  # a run from the UI or the sensor: as `synix run` does first
                scan = scan if scan is not None else ctx.reader.scan()
                settle_failures(ctx, scan, upto=layer)
            if part is not None and not _feeds_this_run(context, children):
                # built in a thread, each partition recorded as soon as it is stored
                # (engine/streamed.py). Not when a step after this one in the same run waits for
                # its output: Dagster records that output per partition of the run, and it must
                # come before Synix's own records, which it would otherwise replace as latest.
                building = StreamedBuild(ctx, layer, scan, keys)
                for outcome in building.arrivals():
                    streamed.add(outcome.group_key)
                    yield from _partitions(ctx, layer, [outcome], prov, key)
                result = building.result()
            else:
                result = build_layer(ctx, layer, scan, keys)
        ctx.store.record_layer_stats(ctx.run_id, layer, result.totals())
        context.log.info(f"{layer}: {result.totals()}")
        # A partition reading a fan-in edge looks stale to Dagster once any upstream partition
        # changed (it cannot tell which months a conversation feeds), so each build of such a
        # layer records every current partition: Synix just verified them against the new inputs.
        # A chunk was asked for partitions its coordinator planned as stale: one found cached was
        # stored by an earlier attempt of this step (its worker died before the step recorded
        # it), so it is recorded now, or Dagster would show a built partition as missing.
        only_changed = ((tags.get(EMIT_TAG) == "changed" or changed_only) and not restamp and not result.failed
                        and not fan_in and not chunk)
        record = [o for o in result.outcomes if o.group_key not in streamed
                  and (o.status == "built" or (o.status == "cached" and not only_changed))]
        if part is None:
            yield from _single(ctx, layer, record, prov)
        else:
            if (record or streamed) and not result.failed and not result.count("blocked") \
                    and _feeds_this_run(context, children):
                yield dg.MaterializeResult()  # lets downstream steps of this run start
            yield from _partitions(ctx, layer, record, prov, key)
            if isinstance(part, dg.StaticPartitionsDefinition):
                yield from _empty_topics(context, ctx, layer, part, keys, prov, key)
        checked = check.key in context.selected_asset_check_keys  # deselectable in the Launchpad
        if checked and chunk:  # its own partitions' plan; the coordinator reports the whole layer's after
            yield check_result(ctx, layer, plan_layer(ctx, layer, scan, None, keys),
                               scope=f" (the {len(keys)} partition(s) of this run)")
        elif checked:  # the plan up to this layer, so partitions whose upstream is not built count
            scan = scan if scan is not None else ctx.reader.scan()
            plans = graph.plan_for_check(ctx, scan, layer) if graph is not None else \
                plan_all(ctx, scan, upto=layer)
            yield check_result(ctx, layer, plans[layer])
        if graph is None and (context.run.parent_run_id or RUN_ID_TAG not in tags) \
                and result.count("built"):
            _refresh_blocked_below(ctx, layer, scan, context.instance, names)
        # a chunk's range is Synix's own (its stale partitions and what lies between them)
        empty = None if chunk else _nothing_behind(ctx, layer, part, asked, result, scan)
        if owned:
            ctx.store.finish_run(ctx.run_id, "failed" if result.failed or empty else "completed", {})
        if result.failed:
            raise _failure(ctx, layer, result)
        if empty:
            raise dg.Failure(description=empty)

    return _layer


def _leads_build(context, pipeline, layer: str, names: Names, part) -> str | None:
    """"backfill" or "automation" when this step starts Dagster's build of the whole memory,
    which it then runs as `synix run` does (its work graph, one run per layer with work):

    - a backfill of every layer and projection, every partition ("Materialize all" on the memory
      group). Dagster's backfill daemon would launch one run per layer, each once its next loop
      (every 30 s) saw the layer above done: 92–108 s where `synix run` takes seconds. The layer
      runs carry the backfill's tag, so the daemon counts what they record as the backfill's,
      finds nothing left to request and completes at its next loop;
    - a run of the automation conditions for a new or changed export, when every layer and
      projection is automated: one hop instead of one per layer (a sensor tick, a run worker's
      start, and for the months a backfill: 104 s to be searchable), and only the conversation's
      own month is rebuilt — the layer runs record every layer before the next condition is
      evaluated, so no condition asks for it again.

    Only the root layer's step leads (the first of the chain), and never in a run Synix launched
    itself (RUN_ID_TAG)."""
    tags = context.run.tags
    if RUN_ID_TAG in tags or not all(u in pipeline.sources for u in pipeline.steps[layer].from_):
        return None
    wanted = {names.layer(n) for n in [*pipeline.steps, *pipeline.projections]}
    if tags.get(SENSOR_TAG, "").startswith(AUTOMATION_SENSOR_PREFIX):
        return "automation" if automates_all(context.instance, wanted) else None
    if BACKFILL_TAG not in tags:
        return None
    backfill = context.instance.get_backfill(tags[BACKFILL_TAG])
    if backfill is None or not wanted <= set(backfill.asset_selection or ()):
        return None
    if part is not None and not set(part.get_partition_keys(dynamic_partitions_store=context.instance)) \
            <= set(context.partition_keys):
        return None
    return "backfill"


def _refresh_blocked_below(ctx, layer: str, scan, instance, names: Names) -> None:
    """After a run from the UI (a re-execution of one layer's run, a partition materialized by
    hand) built partitions, the checks of the layers below that said "blocked" are evaluated
    again: a rebuilt episode no longer blocks its month nor the core, and only this layer's own
    check would otherwise be re-evaluated (`synix run` re-reports every layer it plans)."""
    below = [l for l in ctx.pipeline.layer_order() if layer in ctx.pipeline.upstream(l)
             and says_blocked(instance, names.layer(l))]
    if not below:
        return
    plans = plan_all(ctx, scan if scan is not None else ctx.reader.scan())
    for l in below:
        report_if_changed(instance, check_evaluation(ctx, l, names.layer(l), plans[l]))


def _partitions(ctx, layer: str, outcomes, prov: Provenance, key: dg.AssetKey):
    # The artifacts are read RECORD_BATCH at a time: a cold build's 10,000 transcripts, read in
    # one go with their contents, were the largest allocation of its transcripts run.
    outcomes = list(outcomes)
    for start in range(0, len(outcomes), RECORD_BATCH):
        batch = outcomes[start:start + RECORD_BATCH]
        arts = {a.artifact_id: a for a in ctx.store.get_many(
            [o.artifact_id for o in batch if o.artifact_id and o.status == "built"])}
        shown = partition_names(ctx.store, ctx.pipeline, layer, [o.group_key for o in batch])
        for o in batch:
            art = arts.get(o.artifact_id) if o.status == "built" else ctx.store.current(layer, o.group_key)
            if art is None:
                continue
            yield dg.AssetMaterialization(
                asset_key=key, partition=shown[o.group_key],
                metadata={**artifact_metadata(art), **_outcome_metadata(o)},
                tags=prov.tags(o.group_key, art.content_hash))


def _empty_topics(context, ctx, layer: str, part, keys, prov: Provenance, key: dg.AssetKey):
    """A declared topic no episode matches has nothing to summarise, so the store holds nothing
    for it; recorded as such (once), or Dagster would show it Missing forever and
    "Materialize" would seem to do nothing."""
    wanted = set(part.get_partition_keys()) if keys is None else set(keys)
    empty = wanted - set(ctx.store.current_index(layer)) - {f.group_key for f in ctx.store.failures(layer=layer)}
    if not empty:
        return
    recorded = context.instance.get_materialized_partitions(key)
    for topic in sorted(empty - recorded):
        yield dg.AssetMaterialization(
            asset_key=key, partition=topic, tags=prov.tags(topic, None),
            metadata={"episodes": 0, "artifact_id": "", "note": (
                "no episode matches this topic yet: nothing to summarise, no artifact; it is "
                "built once an episode matches its words")})


def _single(ctx, layer: str, outcomes, prov: Provenance):
    if not outcomes:
        return  # nothing rebuilt (or blocked/failed): nothing new to record
    o = outcomes[0]
    art = ctx.store.get(o.artifact_id) if o.status == "built" else ctx.store.current(layer, o.group_key)
    if art is None:
        return
    yield dg.MaterializeResult(metadata={**artifact_metadata(art), **_outcome_metadata(o)},
                               data_version=dg.DataVersion(data_version(art.content_hash)))


def projection_asset(pipeline, paths, name: str, versions: dict[str, str],
                     names: Names = MAIN_NAMES) -> dg.AssetsDefinition:
    proj = pipeline.projections[name]
    ups = parents(pipeline, name, names)
    deps = [dg.AssetDep(p.key, partition_mapping=dg.AllPartitionMapping()) if p.kind == "fan_in"
            else dg.AssetDep(p.key) for p in ups]
    what = "search index (the agent's RAG)" if proj.kind == "search_index" \
        else f"context document {proj.path} (the agent's system prompt)"
    version = versions[name]

    @dg.asset(key=names.layer(name), deps=deps, group_name=names.group(GROUP), output_required=False,
              description=f"Synix projection: {what}, from {', '.join(p.name for p in ups)}. "
                          f"Rewritten only when the artifacts it reads changed.",
              kinds={"synix", proj.kind}, code_version=version, owners=owners(pipeline),
              automation_condition=when_inputs_change(),
              tags={BRANCH_TAG: names.branch})
    def _projection(context: dg.AssetExecutionContext, store: ArtifactStoreResource, llm: LLMResource):
        with project_lock(paths.lock, timeout_s=settings().lock_timeout_s):
            yield from _run(context, store, llm)

    def _run(context, store, llm):
        ctx = _context(pipeline, paths, context, store, llm)
        empty = [p.name for p in ups if not ctx.store.current_index(p.name)]
        # only when every layer is empty: one failed or blocked leaves the others searchable;
        # `synix run` reports its own
        if len(empty) == len(ups) and context.run.tags.get(EMIT_TAG) != "changed":
            raise dg.Failure(description=(
                f"{name}: nothing to project yet — layer(s) {', '.join(empty)} have no artifacts. "
                f"Build the memory first: `synix run`, or the `synix_build_all` job "
                f"(`dagster job execute -j synix_build_all …`)."))
        result = run_projection(ctx, name)
        if "not_written" in result.detail:  # no document drawn from a layer that holds nothing
            context.log.info(f"{name}: {result.detail['not_written']}")
            return
        # Recorded even when unchanged: `synix run` launches a projection only after a layer it
        # reads was rebuilt, and Dagster would otherwise keep showing it behind those inputs.
        yield dg.MaterializeResult(metadata={**result.detail, "changed": result.changed},
                                   data_version=dg.DataVersion(data_version(
                                       ctx.store.get_meta(f"projection:{name}:key"))))

    return _projection


def source_specs(pipeline, names: Names = MAIN_NAMES) -> list[dg.AssetSpec]:
    return [dg.AssetSpec(names.source(s.name), group_name=SOURCES_GROUP, owners=owners(pipeline),
                         description=f"{s.format} exports in {pipeline.resolve(s.path)}, observed by "
                                     f"the synix_exports_sensor (files, conversations).",
                         metadata={"path": str(pipeline.resolve(s.path)), "format": s.format})
            for s in pipeline.sources.values()]
