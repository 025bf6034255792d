"""Export-folder sensor: keeps the whole memory current while the Dagster daemon runs.

Every tick first syncs the instance with the store (partitions, first-time records, orphans: see
records.py), so any Dagster home shows the real state. Then it looks at the export files. Cursor:
per file its size, mtime and content hash. A file is read only once it has settled: the same size
and mtime on two consecutive ticks, or untouched for `SETTLE_SECONDS` — so an export that is still
being copied is never half-read. When files changed it observes the export folder (files and
conversation counts), registers the new conversation and period partitions, and launches one
`synix_build_all` run: Synix's own plan then rebuilds exactly the affected conversations, months
or topics, core, the search index and the context document (docs/dagster.md explains why this
beats Dagster's own partition mappings here). The run key is derived from the changed content, so
a repeated tick cannot launch the same build twice.
"""

import json
import time

import dagster as dg

from synix_assets.dagster_defs.checks import check_evaluation
from synix_assets.dagster_defs.graph import layer_key, source_key
from synix_assets.dagster_defs.jobs import BRANCH, BRANCH_TAG
from synix_assets.dagster_defs.records import TRIGGER_TAG, register_partitions, sync_instance
from synix_assets.engine.context import BuildContext
from synix_assets.engine.ingest import SourceReader, file_sha256
from synix_assets.engine.layers import is_source_merge, plan_all, plan_layer
from synix_assets.engine.periods import period_of
from synix_resources.errors import LLMConfigError
from synix_resources.fingerprints import sha256_text
from synix_resources.llm.resource import LLMResource
from synix_resources.store.resource import ArtifactStoreResource

SETTLE_SECONDS = 5.0
INTERVAL_SECONDS = 10
SENSOR_NAME = "synix_exports_sensor"


def _settled(prev: dict | None, size: int, mtime_ns: int, now: float) -> bool:
    if prev and prev.get("size") == size and prev.get("mtime") == mtime_ns:
        return True
    return now - mtime_ns / 1e9 >= SETTLE_SECONDS


def changed_files(reader: SourceReader, cursor: dict, now: float) -> tuple[dict, list]:
    """(new cursor, [(path, sha)] of settled files whose content is new or changed)."""
    new_cursor, changed = {}, []
    for _, path, _ in reader.files():
        st = path.stat()
        prev = cursor.get(str(path))
        entry = {"size": st.st_size, "mtime": st.st_mtime_ns, "sha": prev.get("sha") if prev else None}
        if not _settled(prev, st.st_size, st.st_mtime_ns, now):
            entry["sha"] = None  # still being written: look again next tick
        elif not (prev and prev.get("sha") and prev["size"] == st.st_size and prev["mtime"] == st.st_mtime_ns):
            entry["sha"] = file_sha256(path)
            if not prev or prev.get("sha") != entry["sha"]:
                changed.append((str(path), entry["sha"]))
        new_cursor[str(path)] = entry
    return new_cursor, changed


def _observations(pipeline, scan) -> list[dg.AssetObservation]:
    out = []
    for name, src in pipeline.sources.items():
        root = str(pipeline.resolve(src.path))
        files = [f for f in scan.files if f.startswith(root)]
        convs = [s for s in scan.summaries if s.source == name]
        out.append(dg.AssetObservation(asset_key=source_key(name), metadata={
            "files": len(files), "conversations": len({s.conversation_id for s in convs}),
            "messages": sum(s.message_count for s in convs),
            "unreadable_files": len([f for f, _ in scan.failed_files if f.startswith(root)]),
            "file_list": dg.MetadataValue.json(sorted(files)[:200])}))
    return out


def _new_partitions(pipeline, ctx, scan) -> dict[str, list[str]]:
    """Conversation and period partitions the build will need, registered before it starts so the
    UI shows them (as missing) at once."""
    out: dict[str, list[str]] = {}
    dates: dict[str, str | None] = {}
    for layer in pipeline.layer_order():
        if is_source_merge(pipeline, layer):
            plan = plan_layer(ctx, layer, scan, None)
            out[layer] = plan.stale_keys
            dates.update(plan.dates)
        elif pipeline.partitioning(layer) == "period":
            period = pipeline.steps[layer].config["period"]
            out[layer] = sorted({period_of(d, period) for d in dates.values() if d})
    return out


def file_digest(path) -> str:
    return sha256_text(path.read_text(encoding="utf-8")) if path.exists() else ""


def export_sensor(pipeline, paths, build_job, versions: dict[str, str], asset_keys,
                  running: bool = True) -> dg.SensorDefinition:
    loaded_digest = file_digest(paths.pipeline_file)

    @dg.sensor(name=SENSOR_NAME, minimum_interval_seconds=INTERVAL_SECONDS, job=build_job,
               default_status=dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED,
               description="Watches the pipeline's export folders; on a new or changed export it "
                           "builds the whole memory (affected conversations, months/topics, core, "
                           "search index, context document) with the synix_build_all job.")
    def _sensor(context: dg.SensorEvaluationContext, store: ArtifactStoreResource, llm: LLMResource):
        st = store.get_store()
        if file_digest(paths.pipeline_file) == loaded_digest:
            synced = sync_instance(context.instance, pipeline, st, versions, set(asset_keys))
            if synced["partitions_added"] or synced["materializations_recorded"] or synced["orphans_wiped"]:
                context.log.info(f"synced Dagster with the Synix store: {synced}")
        else:  # these definitions are older than pipeline.py: their asset list must not wipe anything
            context.log.info("pipeline.py changed since the definitions loaded: reload the code "
                             "location to sync the new assets")
        cursor = json.loads(context.cursor) if context.cursor else {}
        reader = SourceReader(pipeline, st)
        new_cursor, changed = changed_files(reader, cursor, time.time())
        cursor_text = json.dumps(new_cursor, sort_keys=True)
        if not changed:
            return dg.SensorResult(cursor=cursor_text,
                                   skip_reason=None if new_cursor else "no export files yet")
        ctx = BuildContext(pipeline, st, llm=None, paths=paths, reader=reader)
        scan = reader.scan()
        for _, err in scan.failed_files:
            context.log.warning(err)
        register_partitions(context.instance, pipeline, _new_partitions(pipeline, ctx, scan))
        # Until the build below finishes, the checks say what Synix will rebuild (e.g. core).
        checks = []
        try:
            ctx.llm = llm.get_client()
        except LLMConfigError as exc:  # the build reports it; the tick still launches it
            context.log.warning(exc.one_line())
        else:
            plans = plan_all(ctx, scan)
            checks = [check_evaluation(l, layer_key(l), plans[l]) for l in pipeline.layer_order()]
        context.log.info(f"{len(changed)} export file(s) changed: building the memory")
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=sha256_text(json.dumps(sorted(changed)))[:24],
                                        tags={TRIGGER_TAG: "exports_sensor", BRANCH_TAG: BRANCH})],
            asset_events=[*_observations(pipeline, scan), *checks], cursor=cursor_text)

    return _sensor
