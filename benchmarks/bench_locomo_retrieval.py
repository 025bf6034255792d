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

`--latency MODE` then asks every question again of the built memories and the raw-rag indexes
(the same retrievers the eval uses) and prints wall-clock and CPU p50/p95 per query with the
load average: on a shared machine the wall clock mostly measures the other processes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from synix_assets.eval import workspace
from synix_assets.eval.data import load_locomo
from synix_assets.eval.metrics import percentile
from synix_assets.eval.results import ResultsStore, results_path
from synix_assets.eval.retrieval import MemoryRetriever, RawRag
from synix_assets.project import ProjectPaths

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


def latency(project: Path, data: Path, branches: list[str], mode: str) -> None:
    bench = load_locomo(data)
    print(f"\nlatency, {mode} ({bench.questions} questions each), load average before: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| system | wall p50 ms | wall p95 ms | CPU p50 ms | CPU p95 ms |\n|---|---|---|---|---|")
    main_paths = ProjectPaths(project.resolve())
    systems = [(b, lambda case, b=b: _memory(main_paths.on_branch(b), case)) for b in branches]
    systems.append(("raw-rag", lambda case: RawRag(
        case, workspace.case_folder(main_paths, "locomo", case.case_id) / "raw-rag.sqlite")))
    for name, make in systems:
        wall, cpu = [], []
        for case in bench.cases:
            retriever = make(case)
            retriever.rank("warm up the model and the vector matrix", mode)
            try:
                for q in case.questions:
                    w0, c0 = time.perf_counter(), time.process_time()
                    retriever.rank(q.text, mode)
                    wall.append((time.perf_counter() - w0) * 1000)
                    cpu.append((time.process_time() - c0) * 1000)
            finally:
                retriever.close()
        print(f"| {name} | {percentile(wall, 50):.1f} | {percentile(wall, 95):.1f} | "
              f"{percentile(cpu, 50):.1f} | {percentile(cpu, 95):.1f} |")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def _memory(paths: ProjectPaths, case) -> MemoryRetriever:
    state = workspace.case_folder(paths, "locomo", case.case_id) / ".synix"
    return MemoryRetriever(case, state / "search.db", state / "synix.db")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", required=True, type=Path)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--branch", action="append", default=[])
    ap.add_argument("--modes", default="fts,hybrid")
    ap.add_argument("--tuning", type=int, default=3, help="the first N conversations are the tuning half")
    ap.add_argument("--no-run", action="store_true", help="only read the newest recorded runs")
    ap.add_argument("--latency", metavar="MODE", help="then time every question again in this mode")
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
    if args.latency:
        latency(args.project, args.data, args.branch or ["main"], args.latency)


if __name__ == "__main__":
    main()
