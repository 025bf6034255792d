"""Export-folder sensor: new or changed export files become partitions and a run for exactly them.

Cursor: per file its size, mtime and content hash. A file is read only once it has settled: the
same size and mtime on two consecutive ticks, or untouched for `settle_seconds` — so an export
that is still being copied is never half-read. Ticks are idempotent: an unchanged folder yields
nothing, and the run key is derived from the changed content, so a repeated tick cannot launch
the same run twice.
"""

import json
import time

import dagster as dg

from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.partitions import CONVERSATIONS, dynamic_name
from synix_assets.engine.context import BuildContext
from synix_assets.engine.ingest import SourceReader, file_sha256
from synix_assets.engine.layers import is_source_merge, plan_layer
from synix_assets.engine.periods import period_of
from synix_resources.fingerprints import sha256_text
from synix_resources.store.resource import ArtifactStoreResource

SETTLE_SECONDS = 10.0


def _settled(prev: dict | None, size: int, mtime_ns: int, now: float) -> bool:
    if prev and prev.get("size") == size and prev.get("mtime") == mtime_ns:
        return True
    return now - mtime_ns / 1e9 >= SETTLE_SECONDS


def export_sensor(pipeline, paths) -> dg.SensorDefinition:
    conv_layers = [l for l in pipeline.layer_order() if pipeline.partitioning(l) == "conversation"]

    @dg.sensor(name="synix_exports_sensor", minimum_interval_seconds=30,
               asset_selection=[layer_key(l) for l in conv_layers],
               description="Watches the pipeline's export folders and builds new or changed conversations.")
    def _sensor(context: dg.SensorEvaluationContext, store: ArtifactStoreResource):
        cursor = json.loads(context.cursor) if context.cursor else {}
        reader = SourceReader(pipeline, store.get_store())
        now = time.time()
        new_cursor, changed = {}, []
        for _, path, _ in reader.files():
            st = path.stat()
            prev = cursor.get(str(path))
            entry = {"size": st.st_size, "mtime": st.st_mtime_ns, "sha": prev.get("sha") if prev else None}
            if not _settled(prev, st.st_size, st.st_mtime_ns, now):
                entry["sha"] = None  # still being written: look again next tick
                new_cursor[str(path)] = entry
                continue
            if prev and prev.get("sha") and prev["size"] == st.st_size and prev["mtime"] == st.st_mtime_ns:
                new_cursor[str(path)] = entry
                continue
            digest = file_sha256(path)
            entry["sha"] = digest
            new_cursor[str(path)] = entry
            if not prev or prev.get("sha") != digest:
                changed.append((str(path), digest))
        if not changed:
            return dg.SensorResult(run_requests=[], cursor=json.dumps(new_cursor, sort_keys=True),
                                   skip_reason=None if cursor else "no export files yet")
        ctx = BuildContext(pipeline, store.get_store(), llm=None, paths=paths, reader=reader)
        scan = reader.scan()
        for path, err in scan.failed_files:
            context.log.warning(err)
        stale: list[str] = []
        dates: dict[str, str | None] = {}
        for layer in pipeline.layer_order():
            if is_source_merge(pipeline, layer):
                plan = plan_layer(ctx, layer, scan, None)
                stale += [k for k in plan.stale_keys if k not in stale]
                dates.update(plan.dates)
        requests = []
        existing = list(context.instance.get_dynamic_partitions(CONVERSATIONS.name))
        new_keys = [k for k in stale if k not in set(existing)]
        if new_keys:
            requests.append(CONVERSATIONS.build_add_request(new_keys))
        for layer in pipeline.layer_order():
            name = dynamic_name(pipeline, layer)
            if pipeline.partitioning(layer) == "period" and name:
                period = pipeline.steps[layer].config["period"]
                have = set(context.instance.get_dynamic_partitions(name))
                add = sorted({period_of(d, period) for d in dates.values()} - have)
                if add:
                    requests.append(dg.AddDynamicPartitionsRequest(partitions_def_name=name, partition_keys=add))
        runs = []
        if stale:
            order = existing + new_keys
            positions = sorted(order.index(k) for k in stale)
            start, end = order[positions[0]], order[positions[-1]]
            runs.append(dg.RunRequest(
                run_key=sha256_text(json.dumps(sorted(changed)))[:24],
                asset_selection=[layer_key(l) for l in conv_layers],
                tags={"dagster/asset_partition_range_start": start,
                      "dagster/asset_partition_range_end": end,
                      "synix/trigger": "exports_sensor"}))
        context.log.info(f"{len(changed)} export file(s) changed; {len(stale)} conversation(s) to build")
        return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=requests,
                               cursor=json.dumps(new_cursor, sort_keys=True))

    return _sensor
