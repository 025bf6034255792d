"""Cost of one Dagster asset-materialization event on a Synix DAGSTER_HOME (SQLite), per variant.

    python benchmarks/bench_dagster_events.py [--events 300] [--repeat 3]

Each variant runs in a fresh process with a fresh DAGSTER_HOME set up exactly as `synix run`
does (`runner.dagster_instance`: Synix's dagster.yaml, `storage.tune`), then reports N runless
partitioned AssetMaterialization events with metadata shaped like Synix's. Variants apply the
prototype fixes of `prototype_fixes.py` before the instance is created:

- `as shipped`: storage.py as it is (Synix's event log storage, dagster_defs/event_log.py);
- `stocklog`: Dagster's own ConsolidatedSqliteEventLogStorage, as before that storage;
- `engine`: the earlier prototype, a pooled Engine patched into Dagster's classes.

`--range N` also times one Dagster run of a single-run-backfill asset over N partitions (one
output, N materialization events, N planned events), with DAGSTER_EVENT_BATCH_SIZE unset and set,
and counts the storage's store_event and store_event_batch calls: where Dagster batches.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """import json, os, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import prototype_fixes
prototype_fixes.apply(sys.argv[3])
from pathlib import Path
import dagster as dg
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.project import ProjectPaths
root, n = Path(sys.argv[2]), int(sys.argv[4])
instance = dagster_instance(ProjectPaths(root))
key = dg.AssetKey(["episodes"])
md = {"synix/status": "built", "artifact_id": "episodes-0123456789abcdef", "cache": "built",
      "provider": "fake", "model": "fake-v1", "llm_calls": 1, "tokens_in": 1200, "tokens_out": 40,
      "cost_usd": 0.0, "input_count": 1, "preview": dg.MetadataValue.md("x" * 300)}
def one(i):
    instance.report_runless_asset_event(dg.AssetMaterialization(
        asset_key=key, partition=f"conv-{i:06d}", metadata=md,
        tags={"dagster/code_version": "0123456789abcdef", "dagster/data_version": f"{i:016x}"}))
for i in range(20):  # warm up: first writes create tables' pages and the WAL
    one(i)
instance.get_latest_materialization_event(key)
start = time.perf_counter()
for i in range(20, 20 + n):
    one(i)
# a read: events a storage keeps to write in a batch are written before it, inside the timing
instance.get_latest_materialization_event(key)
elapsed = time.perf_counter() - start
size = sum(p.stat().st_size for p in (root / ".synix" / "dagster").rglob("*") if p.is_file())
print(json.dumps({"ms_per_event": elapsed / n * 1000, "dagster_bytes": size,
                  "storage": type(instance.event_log_storage).__name__}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--range", type=int, default=0, help="partitions of the range run")
    parser.add_argument("--variants", default="stocklog|",
                        help="'|'-separated patch sets (empty = as shipped)")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "DAGSTER_"))}
    env["PYTHONWARNINGS"] = "ignore"
    rows = []
    for variant in args.variants.split("|"):
        times, size = [], 0
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="synix-events-") as tmp:
                out = subprocess.run([sys.executable, "-c", _CHILD, str(HERE), tmp, variant,
                                      str(args.events)], env=env, capture_output=True, text=True,
                                     check=True).stdout
                data = json.loads(out.strip().splitlines()[-1])
                times.append(data["ms_per_event"])
                size = data["dagster_bytes"]
        rows.append((f"{variant or 'as shipped'} ({data['storage']})", times, size))
    load = "%.2f %.2f %.2f" % os.getloadavg()
    print(f"| variant | ms per event (median of {args.repeat}) | runs | DAGSTER_HOME bytes after "
          f"{args.events + 20} events | load |")
    print("|---|---:|---|---:|---|")
    for name, times, size in rows:
        print(f"| {name} | {statistics.median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} | "
              f"{size:,} | {load} |")
    if args.range:
        print()
        _range_runs(args, env)
    return 0


_RANGE_CHILD = """import json, os, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import prototype_fixes
prototype_fixes.apply(sys.argv[3])
from pathlib import Path
import dagster as dg
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.project import ProjectPaths
root, n = Path(sys.argv[2]), int(sys.argv[4])
instance = dagster_instance(ProjectPaths(root))
storage = instance.event_log_storage
calls = {"store_event": 0, "store_event_batch": 0, "batched_events": 0}
single, batch = storage.store_event, storage.store_event_batch
def store_event(event):
    calls["store_event"] += 1
    single(event)
def store_event_batch(events):
    calls["store_event_batch"] += 1
    calls["batched_events"] += len(events)
    batch(events)
storage.store_event, storage.store_event_batch = store_event, store_event_batch
parts = dg.StaticPartitionsDefinition([f"conv-{i:06d}" for i in range(n)])
@dg.asset(partitions_def=parts, backfill_policy=dg.BackfillPolicy.single_run())
def episodes(context) -> None:
    return None  # no work: only what Dagster records for a range run is timed
start = time.perf_counter()
dg.materialize([episodes], instance=instance, tags={
    "dagster/asset_partition_range_start": "conv-000000",
    "dagster/asset_partition_range_end": f"conv-{n - 1:06d}"})
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, **calls, "storage": type(storage).__name__}))
"""


def _range_runs(args, env: dict) -> None:
    print(f"| variant | DAGSTER_EVENT_BATCH_SIZE | run of {args.range} partitions, s | runs | "
          f"store_event calls | store_event_batch calls (events) | load |")
    print("|---|---:|---:|---|---:|---:|---|")
    for variant in args.variants.split("|"):
        for batch in ("", "1000"):
            times, data = [], {}
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="synix-range-") as tmp:
                    child_env = {**env, **({"DAGSTER_EVENT_BATCH_SIZE": batch} if batch else {})}
                    out = subprocess.run([sys.executable, "-c", _RANGE_CHILD, str(HERE), tmp,
                                          variant, str(args.range)], env=child_env,
                                         capture_output=True, text=True, check=True).stdout
                    data = json.loads(out.strip().splitlines()[-1])
                    times.append(data["seconds"])
            load = "%.2f %.2f %.2f" % os.getloadavg()
            print(f"| {variant or 'as shipped'} ({data['storage']}) | {batch or 'unset'} | "
                  f"{statistics.median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} | "
                  f"{data['store_event']} | {data['store_event_batch']} ({data['batched_events']}) "
                  f"| {load} |")


if __name__ == "__main__":
    raise SystemExit(main())
