"""LoCoMo retrieval against the issue-15 target, through the real CLI, per conversation.

    python benchmarks/bench_locomo_retrieval.py --project DIR --data locomo10.json \
        --branch main --branch topical --modes fts,hybrid

Runs `synix eval locomo --data F --branch … --baseline raw-rag --modes … --json` in DIR (a Synix
project; each branch's pipeline is built in its scratch eval workspace, from the project's LLM
response cache when it holds the answers), then reads the per-question rows the run recorded in
`DIR/.synix/eval/results.db` and prints session recall@5, turn recall@10 and the p50 retrieval
latency per system × mode: per conversation, for the tuning half (the first three
conversations of the file), the held-out half (the others) and all. `--no-run` only re-reads the
newest recorded runs. Target (issue 15, categories 1-4, no LLM at query time):
S@5 >= 0.97, T@10 >= 0.90, p50 <= 50 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from synix_assets.eval.data import load_locomo
from synix_assets.eval.metrics import percentile
from synix_assets.eval.results import ResultsStore, results_path

TARGET = {"S@5": 0.97, "T@10": 0.90, "p50 ms": 50.0}


def run_cli(project: Path, data: Path, branches: list[str], modes: str) -> None:
    cmd = [sys.executable, "-m", "synix_assets.cli", "eval", "locomo", "--data", str(data),
           "-p", str(project), "--baseline", "raw-rag", "--modes", modes, "--json"]
    for b in branches:
        cmd += ["--branch", b]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, env=os.environ.copy())
    json.loads(out.stdout)  # one JSON object, or the run failed


def figures(rows: list[dict]) -> tuple[float, float, float, int]:
    n = len(rows)
    s5 = sum(r["scores"]["session"]["any@5"] for r in rows) / n
    t10 = sum(r["scores"]["turn"]["any@10"] for r in rows) / n
    return s5, t10, percentile([r["ms"] for r in rows], 50), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", required=True, type=Path)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--branch", action="append", default=[])
    ap.add_argument("--modes", default="fts,hybrid")
    ap.add_argument("--tuning", type=int, default=3, help="the first N conversations are the tuning half")
    ap.add_argument("--no-run", action="store_true", help="only read the newest recorded runs")
    args = ap.parse_args()
    if not args.no_run:
        run_cli(args.project, args.data, args.branch or ["main"], args.modes)
    cases = [c.case_id for c in load_locomo(args.data).cases]
    halves = {"tuning": cases[:args.tuning], "held-out": cases[args.tuning:], "all": cases}
    with ResultsStore(results_path(args.project / ".synix")) as store:
        entries = store.latest("locomo")
        rows: dict[tuple[str, str], list[dict]] = {}
        for e in entries:
            run = e["run"]
            for r in store.question_rows(run["run_id"]):
                if r.get("scores"):
                    name = run["branch"] if r["system"] == "memory" else r["system"]
                    rows.setdefault((name, r["mode"]), []).append(r)
    print("| system | mode | part | questions | S@5 | T@10 | p50 ms |")
    print("|---|---|---|---|---|---|---|")
    for (system, mode), mine in sorted(rows.items()):
        parts = [(c, [c]) for c in cases] + list(halves.items())
        for label, ids in parts:
            sel = [r for r in mine if r["case"] in ids]
            if sel:
                s5, t10, p50, n = figures(sel)
                print(f"| {system} | {mode} | {label} | {n} | {s5:.3f} | {t10:.3f} | {p50:.1f} |")
    print(f"\ntarget: S@5 >= {TARGET['S@5']}, T@10 >= {TARGET['T@10']}, p50 <= {TARGET['p50 ms']} ms")
    for (system, mode), mine in sorted(rows.items()):
        s5, t10, p50, _ = figures(mine)
        met = [s5 >= TARGET["S@5"], t10 >= TARGET["T@10"], p50 <= TARGET["p50 ms"]]
        print(f"{system}/{mode}: S@5 {s5:.3f} {'met' if met[0] else 'NOT met'}, "
              f"T@10 {t10:.3f} {'met' if met[1] else 'NOT met'}, p50 {p50:.1f} ms {'met' if met[2] else 'NOT met'}")


if __name__ == "__main__":
    main()
