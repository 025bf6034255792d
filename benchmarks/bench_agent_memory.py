"""Agent-memory benchmarks (issue 32): is writing agent memories linear in the number of ops?

    python benchmarks/bench_agent_memory.py --log-sizes 500,1000,2000,4000
    python benchmarks/bench_agent_memory.py --log-sizes 0 --build-sizes 50,100,200

Two measurements, each printed as one JSON line per size (run it with PYTHONPATH set to the
checkout to measure, e.g. a `git archive` of an older commit, to compare before and after):

- `log`: N `create` ops appended through one open `MemoryLog` (what a build's writer does), in a
  fresh file; the total, and the time per op over the last tenth (a whole replay per append makes
  it grow with N, an incremental one keeps it flat).
- `build`: a project from `synix init --template syke` over N seeded synthetic conversations
  (`generate_exports.py`), built offline (`SYNIX_LLM_PROVIDER=extractive`: one memory per key
  sentence of each episode) by a `synix run --json` process; the agent step's own seconds
  (`layers.memories.seconds`), the whole build's wall time, and the ops it wrote.

Benchmarks are not tests; nothing here is run by the test suite.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate_exports import generate  # noqa: E402 (benchmark-local module)

SYNIX = str(Path(sys.executable).parent / "synix")


def bench_log(n: int, folder: Path) -> dict:
    from synix_resources.agent_memory.log import MemoryLog

    log = MemoryLog(folder / f"ops-{n}.db")
    tail = max(1, n // 10)
    try:
        started = time.perf_counter()
        for i in range(n):
            if i == n - tail:
                tail_started = time.perf_counter()
            log.append({"op": "create", "memory_id": f"mem-{i:08d}", "evidence": [],
                        "content": f"synthetic fact {i}: someone said something worth keeping",
                        "valid_from": "2025-01-01T00:00:00Z"})
        ended = time.perf_counter()
    finally:
        log.close()
    return {"bench": "log", "ops": n, "total_s": round(ended - started, 3),
            "ms_per_op_last_tenth": round((ended - tail_started) * 1000 / tail, 3)}


def bench_build(n: int, folder: Path) -> dict:
    root = folder / f"syke-{n}"
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "extractive", "DAGSTER_HOME": str(folder / f"dh-{n}")}
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    export = folder / f"conversations-{n}.json"
    generate(n, months=12, seed=7, out_path=export)
    subprocess.run([SYNIX, "init", str(root), "--template", "syke", "--from", str(export)],
                   check=True, env=env, capture_output=True)
    started = time.perf_counter()
    done = subprocess.run([SYNIX, "run", "--json"], cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"build of {n} conversations failed: {done.stderr.strip()[-400:]}")
    report = json.loads(done.stdout)
    db = sqlite3.connect(root / ".synix" / "memory_ops.db")
    store = sqlite3.connect(root / ".synix" / "synix.db")
    try:
        ops = db.execute("SELECT COUNT(*) FROM ops").fetchone()[0]
        # the layer's own seconds are in the run's stats (the report carries only the totals)
        stats = json.loads(store.execute("SELECT stats FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0])
    finally:
        db.close()
        store.close()
    return {"bench": "build", "conversations": n, "ops": ops,
            "episodes": report["layers"]["episodes"]["built"],
            "agent_step_s": stats["layers"]["memories"]["seconds"], "build_wall_s": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-sizes", default="500,1000,2000,4000", help="ops per log run (0: skip)")
    parser.add_argument("--build-sizes", default="", help="conversations per syke build (empty: skip)")
    parser.add_argument("--out", default=None, help="folder for the files (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-agent-memory-") as tmp:
        folder = Path(args.out or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in [int(x) for x in args.log_sizes.split(",") if x.strip() and int(x)]:
            print(json.dumps(bench_log(n, folder)), flush=True)
        for n in [int(x) for x in args.build_sizes.split(",") if x.strip()]:
            print(json.dumps(bench_build(n, folder)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
