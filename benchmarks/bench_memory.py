"""Peak RSS and wall time of a cold build, a no-op and +10 conversations at one size.

    python benchmarks/bench_memory.py --n 2000 [--out DIR] [--scenarios cold,noop,plus10]

Same setup as `bench_build.py` (seeded ChatGPT export over 24 months, `synix init`, the `fake`
provider at zero latency); every build is a fresh `synix run --json` process timed from outside,
its peak RSS from `os.wait4`; the load average is printed before and after each run.
Not a test: nothing here runs in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_build import MONTHS, SEED, SYNIX, git_rev, load, run_child  # noqa: E402
from generate_exports import generate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--out", default="/tmp/synix-bench-memory")
    parser.add_argument("--scenarios", default="cold,noop,plus10")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "DAGSTER_"))}
    env.update(SYNIX_LLM_PROVIDER="fake", SYNIX_FAKE_LATENCY_S="0", PYTHONWARNINGS="ignore")
    base = Path(args.out).resolve() / f"n{args.n}"
    if base.exists():
        shutil.rmtree(base)
    data = base / "data"
    generate(args.n, MONTHS, SEED, "chatgpt", data / "conversations.json")
    generate(10, MONTHS, SEED + 1000 + args.n, "chatgpt", data / "more-conversations.json")
    proj = base / "proj"
    run_child([SYNIX, "init", str(proj), "--from", str(data / "conversations.json")], env)
    print(f"N={args.n} code {git_rev()}", flush=True)
    wanted = args.scenarios.split(",")
    for scenario in ("cold", "noop", "plus10"):
        if scenario not in wanted:
            continue
        if scenario == "plus10":
            shutil.copy2(data / "more-conversations.json", proj / "exports" / "more-conversations.json")
        before = load()
        res = run_child([SYNIX, "run", "--json"], env, cwd=proj)
        report = json.loads(res["stdout"])
        print(json.dumps({"scenario": scenario, "n": args.n, "seconds": round(res["seconds"], 2),
                          "peak_rss_mb": round(res["rss_mb"]), "llm_calls": report["llm_calls"],
                          "load_before": before, "load_after": load()}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
