"""One Dagster asset per layer and per projection, compiled from a Pipeline.

Synix's materialization keys decide what is rebuilt; Dagster runs, records and displays. An asset
run over a partition range builds only the partitions whose keys changed, and records a
materialization (with its Synix metadata) for exactly those, so a no-op costs no events. A run
started from the Dagster UI or CLI (no `synix/emit` tag) also records the cached partitions it
was asked for, so the person who asked sees them.
"""

import os

import dagster as dg

from synix_assets.dagster_defs.partitions import partitions_for
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import build_layer, is_source_merge
from synix_assets.engine.locking import project_lock
from synix_assets.engine.projections import run_projection
from synix_resources.llm.resource import LLMResource
from synix_resources.store.resource import ArtifactStoreResource

RUN_ID_TAG = "synix/run_id"
EMIT_TAG = "synix/emit"  # "changed": only built partitions get a materialization event
FULL_LAYER_TAG = "synix/full_layer"  # "1": build the whole layer, incl. retiring vanished groups
BATCH_TAG = "synix/batch"
GROUP = "memory"


RESERVED = {"context", "conf", "config", "meta", "arg_dict", "dict", "input_arg_dict",
            "output_arg_dict", "int", "str", "float", "bool", "input", "output", "type"}


def dagster_name(name: str) -> str:
    """Synix names may contain '-'; Dagster names may not, nor be a reserved word."""
    clean = name.replace("-", "_")
    return f"synix_{clean}" if clean in RESERVED else clean


def layer_key(layer: str) -> dg.AssetKey:
    return dg.AssetKey([dagster_name(layer)])


def source_key(name: str) -> dg.AssetKey:
    return dg.AssetKey(["sources", name])


def _context(pipeline, paths, context, store: ArtifactStoreResource, llm: LLMResource) -> BuildContext:
    tags = context.run.tags if context.run else {}
    return BuildContext(pipeline, store.get_store(), llm.get_client(), paths,
                        run_id=tags.get(RUN_ID_TAG) or context.run.run_id,
                        batch=tags.get(BATCH_TAG) == "1")


def _metadata(ctx, layer: str, outcome) -> dict:
    md = {"synix/status": outcome.status, "artifact_id": outcome.artifact_id or "",
          "cache": "hit" if outcome.status == "cached" else "built",
          "provider": outcome.provider, "model": outcome.model,
          "llm_calls": outcome.llm_calls, "tokens_in": outcome.tokens_in,
          "tokens_out": outcome.tokens_out, "cost_usd": float(outcome.cost_usd),
          "input_count": outcome.input_count}
    if outcome.provider == "extractive":
        md["note"] = "extractive summary (selected sentences, no LLM)"
    if outcome.preview:
        md["preview"] = dg.MetadataValue.md(outcome.preview)
    if outcome.reason:
        md["reason"] = outcome.reason
    return md


def _events(ctx, context, layer: str, partitioned: bool, result, version: str):
    """Synix-launched runs of a partitioned layer: one materialization per *built* partition, so
    a no-op records nothing. Unpartitioned layers and runs launched from the UI, `dagster asset
    materialize` or the sensor may chain assets, which needs the output: one MaterializeResult
    for the requested partitions (with the partition's own metadata when there is exactly one)."""
    if context.run.tags.get(EMIT_TAG) == "changed" and partitioned:
        for o in result.outcomes:
            if o.status != "built":
                continue
            tags = {"dagster/code_version": version}
            if o.content_hash:
                tags["dagster/data_version"] = o.content_hash[:16]
            yield dg.AssetMaterialization(
                asset_key=layer_key(layer), partition=o.group_key if partitioned else None,
                metadata=_metadata(ctx, layer, o), tags=tags)
        return
    outcomes = [o for o in result.outcomes if o.status in ("built", "cached")]
    if not outcomes and not partitioned:
        return  # blocked or failed: nothing new to record, and what follows must not run on it
    if len(outcomes) == 1:
        o = outcomes[0]
        if o.status == "cached":
            art = ctx.store.current(layer, o.group_key)
            if art is not None:
                o.artifact_id, o.content_hash = art.artifact_id, art.content_hash
        yield dg.MaterializeResult(metadata=_metadata(ctx, layer, o),
                                   data_version=dg.DataVersion(o.content_hash[:16]) if o.content_hash else None)
        return
    totals = result.totals()
    yield dg.MaterializeResult(metadata={
        "built": totals["built"], "cached": totals["cached"], "failed": totals["failed"],
        "llm_calls": totals["llm_calls"], "tokens_in": totals["tokens_in"],
        "tokens_out": totals["tokens_out"], "cost_usd": float(totals["cost_usd"]),
        "partitions": dg.MetadataValue.json({o.group_key: {"status": o.status, "artifact_id": o.artifact_id}
                                             for o in result.outcomes[:500]})})


def _ensure_run(ctx, pipeline, layer: str, context) -> bool:
    """Runs launched from the UI/CLI/sensor get a Synix run record too; True if this asset owns it."""
    if ctx.store.get_run(ctx.run_id) is not None:
        return False
    ctx.store.start_run(pipeline.name, [layer], run_id=ctx.run_id, dagster_run_id=context.run.run_id)
    return True


def _failure(layer: str, result) -> dg.Failure:
    failed = result.failed
    names = ", ".join(o.group_key for o in failed[:10]) + (" …" if len(failed) > 10 else "")
    return dg.Failure(
        description=f"{layer}: {len(failed)} partition(s) failed: {names}. "
                    f"First error: {failed[0].error}. Other partitions were kept; "
                    f"a rerun retries only the failed ones.",
        metadata={"failed": [o.group_key for o in failed],
                  "errors": dg.MetadataValue.json({o.group_key: o.error for o in failed})})


def _lock_timeout() -> float:
    return float(os.environ.get("SYNIX_LOCK_TIMEOUT_S", "600"))


def layer_asset(pipeline, paths, layer: str, llm_identity: str) -> dg.AssetsDefinition:
    step = pipeline.steps[layer]
    part = partitions_for(pipeline, layer)
    deps = []
    for up in step.from_:
        if up in pipeline.sources:
            deps.append(dg.AssetDep(source_key(up)))
        elif partitions_for(pipeline, up) == part and part is not None:
            deps.append(dg.AssetDep(layer_key(up)))
        else:
            deps.append(dg.AssetDep(layer_key(up), partition_mapping=dg.AllPartitionMapping()))
    identity = "" if step.kind == "merge" else llm_identity
    version = pipeline.version(layer, identity)
    description = step.description or f"{step.kind} of {', '.join(step.from_)} (level {pipeline.level(layer)})"

    @dg.asset(name=dagster_name(layer), deps=deps, partitions_def=part, group_name=GROUP,
              code_version=version[:16], description=description, output_required=False,
              backfill_policy=dg.BackfillPolicy.single_run() if part is not None else None,
              kinds={"synix", step.kind}, metadata={"synix/level": pipeline.level(layer),
                                                    "synix/kind": step.kind},
              tags={"synix/level": str(pipeline.level(layer))})
    def _layer(context: dg.AssetExecutionContext, store: ArtifactStoreResource, llm: LLMResource):
        # Sensor- and UI-launched runs wait for a CLI build of the same project (and vice versa).
        with project_lock(paths.lock, timeout_s=_lock_timeout()):
            yield from _build_layer(context, store, llm)

    def _build_layer(context, store, llm):
        ctx = _context(pipeline, paths, context, store, llm)
        owned = _ensure_run(ctx, pipeline, layer, context)
        full = (context.run.tags.get(FULL_LAYER_TAG) == "1") if context.run else False
        keys = None if (part is None or full) else set(context.partition_keys)
        scan = ctx.reader.scan() if is_source_merge(pipeline, layer) else None
        result = build_layer(ctx, layer, scan, keys)
        ctx.store.record_layer_stats(ctx.run_id, layer, result.totals())
        context.log.info(f"{layer}: {result.totals()}")
        yield from _events(ctx, context, layer, part is not None, result, version[:16])
        if owned:
            ctx.store.finish_run(ctx.run_id, "failed" if result.failed else "completed", {})
        if result.failed:
            raise _failure(layer, result)

    return _layer


def projection_asset(pipeline, paths, name: str) -> dg.AssetsDefinition:
    proj = pipeline.projections[name]
    layers = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
    deps = [dg.AssetDep(layer_key(l), partition_mapping=dg.AllPartitionMapping())
            if partitions_for(pipeline, l) is not None else dg.AssetDep(layer_key(l)) for l in layers]
    what = "search index" if proj.kind == "search_index" else f"context document {proj.path}"

    @dg.asset(name=dagster_name(name), deps=deps, group_name="projections", output_required=False,
              description=f"Projection: {what} from {', '.join(layers)}",
              kinds={"synix", proj.kind}, code_version=proj.kind)
    def _projection(context: dg.AssetExecutionContext, store: ArtifactStoreResource, llm: LLMResource):
        with project_lock(paths.lock, timeout_s=_lock_timeout()):
            yield from _run(context, store, llm)

    def _run(context, store, llm):
        ctx = _context(pipeline, paths, context, store, llm)
        result = run_projection(ctx, name)
        metadata = {**result.detail, "changed": result.changed}
        if context.run.tags.get(EMIT_TAG) != "changed":
            yield dg.MaterializeResult(metadata=metadata)
        elif result.changed:
            yield dg.AssetMaterialization(asset_key=layer_key(name), metadata=metadata)

    return _projection


def source_specs(pipeline) -> list[dg.AssetSpec]:
    return [dg.AssetSpec(source_key(s.name), group_name="sources",
                         description=f"{s.format} exports at {pipeline.resolve(s.path)}",
                         metadata={"path": str(pipeline.resolve(s.path)), "format": s.format})
            for s in pipeline.sources.values()]
