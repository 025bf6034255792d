"""Cost of one Dagster asset-materialization event on a Synix DAGSTER_HOME (SQLite), per variant.

    python benchmarks/bench_dagster_events.py [--events 300] [--repeat 3]

Each variant runs in a fresh process with a fresh DAGSTER_HOME set up exactly as `synix run`
does (`runner.dagster_instance`: Synix's dagster.yaml, `storage.tune`), then reports N runless
partitioned AssetMaterialization events with metadata shaped like Synix's. Variants apply the
prototype fixes of `prototype_fixes.py` before the instance is created:

- `as shipped`: storage.py as it is;
- `keeper`: keeper connections that read once, so they hold the WAL index;
- `keeper,engine`: plus one pooled SQLAlchemy Engine per Dagster SQLite storage.
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
start = time.perf_counter()
for i in range(20, 20 + n):
    one(i)
elapsed = time.perf_counter() - start
size = sum(p.stat().st_size for p in (root / ".synix" / "dagster").rglob("*") if p.is_file())
print(json.dumps({"ms_per_event": elapsed / n * 1000,
                  "dagster_bytes": size}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variants", default="|keeper|keeper,engine",
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
        rows.append((variant or "as shipped", times, size))
    load = "%.2f %.2f %.2f" % os.getloadavg()
    print(f"| variant | ms per event (median of {args.repeat}) | runs | DAGSTER_HOME bytes after "
          f"{args.events + 20} events | load |")
    print("|---|---:|---|---:|---|")
    for name, times, size in rows:
        print(f"| {name} | {statistics.median(times):.2f} | {', '.join(f'{t:.2f}' for t in times)} | "
              f"{size:,} | {load} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
