"""The generated MEME-style benchmark (synix_assets/eval/meme.py) over several seeds: per task
type (Exact recall, Tracking, Deletion, Cascade, Absence), the memory (the temporal fact layer
read through the brief and `as_of`) beside raw RAG (the turns searched as they are), summed over
the seeds, plus build and forget times.

    python benchmarks/bench_meme.py [--seeds 1,2,3] [--sessions 30] [--unseen 0.3] [--dir /tmp/meme-bench] [--out FILE]

Each seed builds its own scratch memory (`--dir`/seed-N) through the normal build and forgets
its chosen conversations with `forget`. Prints a Markdown table (`--out FILE`: the results as JSON).
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from synix_assets.eval.meme import TASKS
from synix_assets.eval.meme_run import run_meme


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--people", type=int, default=6)
    ap.add_argument("--unseen", type=float, default=0.0,
                    help="share of statements in phrasings the offline rules do not know")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    base = Path(args.dir).resolve() if args.dir else Path(tempfile.mkdtemp(prefix="meme-bench-"))
    runs = [run_meme(base / f"seed-{seed}", seed=int(seed), people=args.people, sessions=args.sessions,
                     unseen=args.unseen)
            for seed in args.seeds.split(",")]
    total = {system: {t: [0, 0] for t in TASKS} for system in ("memory", "raw-rag")}
    for run in runs:
        for system, rows in run["scores"].items():
            for task, row in rows.items():
                total[system][task][0] += row["correct"]
                total[system][task][1] += row["probes"]
    print(f"seeds {args.seeds}, {args.sessions} conversations each, {args.unseen:.0%} unseen phrasings ({base})\n")
    print("| task | probes | memory (brief + as_of) | raw RAG |\n|---|---|---|---|")
    for task in TASKS:
        (mc, n), (rc, _) = total["memory"][task], total["raw-rag"][task]
        print(f"| {task} | {n} | {mc}/{n} ({mc / n:.0%}) | {rc}/{n} ({rc / n:.0%}) |" if n else f"| {task} | 0 | – | – |")
    print("\nbuild s: " + ", ".join(str(r["build_seconds"]) for r in runs)
          + "; forget s: " + ", ".join(str(r["forget_seconds"]) for r in runs))
    if args.out:
        Path(args.out).write_text(json.dumps({"runs": runs, "total": total}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
