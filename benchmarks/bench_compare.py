"""Synix and the reference Synix (PyPI synix==0.22.2, own venv) side by side, in one run.

    python benchmarks/bench_compare.py --sizes 500,2000,10000 [--repeat 3] [--out DIR]
    python benchmarks/bench_compare.py --sizes 2000 --llm-bound-only
    python benchmarks/bench_compare.py --sizes 500,2000 --dagster-storage pgbouncer

Per size N (the same generated export for both: N ChatGPT conversations over 24 months, seed 7,
`generate_exports.py`): cold build, no-op rebuild, +10 conversations (a second export file),
each a fresh process timed from outside with its peak RSS and CPU seconds (user + system, all
threads) from `os.wait4`; ours is `synix run --json` on a `synix init` project (SQLite Dagster
home), the reference is `synix build` on its monthly template (full-text search, context file),
both with a fake LLM at `--latency` (zero by default); the reference runs without our
PYTHONPATH (this repository's `synix` package would shadow it). Runs alternate ours/reference so load drifts hit both; the table gives medians of
`--repeat` runs (`--cold-repeat` for cold builds: each from a fresh copy), ratios ours/reference,
and the load average next to every figure. Then the LLM-bound cases: 200 conversations / 6
months at 0.3 s and concurrency 20, and (`--big-llm`) 2,000 / 24 months at 1 s and 32, against
the ideal bound (calls × latency / concurrency + one latency per dependent level, the fold's
sequential steps counted). The reference is installed by `reference_synix.ensure()` or the
benchmark stops with one line saying why.

`--dagster-storage pgbouncer` runs ours with Dagster's storage on PostgreSQL behind PgBouncer in
transaction mode, as docs/postgres.md sets it up (Synix's store stays on SQLite): the benchmark
starts a PostgreSQL with its default durability and a PgBouncer on loopback (tests/support), gives
every freshly initialised project its own database (`synchronous_commit = off`, the same trade as
the SQLite default's `synchronous=NORMAL`), and stops both by PID at the end. The no-op and +10
runs work on copies of one built project, so they share its database.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import reference_synix  # noqa: E402 (benchmark-local modules)
from bench_build import PY, SYNIX, git_rev, load, run_child  # noqa: E402
from generate_exports import generate  # noqa: E402

MONTHS = 24
SEED = 7
TARGETS = {"cold build": 0.85, "+10 conversations": 0.35, "no-op rebuild": 0.2}  # × reference
ABSOLUTE = {("cold build", 10000): ("rss", 500.0), ("no-op rebuild", 10000): ("s", 1.0),
            ("+10 conversations", 10000): ("s", 5.0)}


class Compare:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out).resolve()
        self.ref_py = str(reference_synix.ensure())
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "DAGSTER_"))}
        env.update(SYNIX_LLM_PROVIDER="fake", SYNIX_FAKE_LATENCY_S=str(args.latency),
                   PYTHONWARNINGS="ignore")
        if args.concurrency:
            env["SYNIX_LLM_CONCURRENCY"] = str(args.concurrency)
        if not args.no_bytecode:
            env.update(_bytecode_cache(env))
        self.env = env
        self.rows: list[dict] = []
        self.notes: list[str] = []
        self.pg = self.bouncer = None
        if args.dagster_storage == "pgbouncer":
            from tests.support.pgbouncer import start_pgbouncer
            from tests.support.postgres import start_postgres

            self.pg = start_postgres(durable=True)
            self.bouncer = start_pgbouncer(self.pg)

    def close(self) -> None:
        for server in (self.bouncer, self.pg):
            if server is not None:
                server.stop()

    def init_ours(self, proj: Path, export: Path, env: dict | None = None) -> Path:
        """`synix init` of a fresh project from `export` (with its own Dagster database on
        PostgreSQL in the PgBouncer setup)."""
        shutil.rmtree(proj, ignore_errors=True)
        extra = []
        if self.bouncer is not None:
            import psycopg

            url = self.pg.create_database("dagster")
            name = url.rsplit("/", 1)[1]
            with psycopg.connect(self.pg.url(), autocommit=True) as conn:
                conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
            extra = ["--dagster-storage", self.bouncer.url(name)]
        run_child([SYNIX, "init", str(proj), "--from", str(export), *extra], env or self.env)
        return proj

    def ours(self, proj: Path, env: dict | None = None) -> dict:
        res = run_child([SYNIX, "run", "--json"], env or self.env, proj)
        res["report"] = json.loads(res["stdout"])
        return res

    def ref(self, proj: Path, concurrency: int, env: dict | None = None) -> dict:
        # never our PYTHONPATH: this repository's `synix` package would shadow the reference's
        env = {k: v for k, v in (env or self.env).items()
               if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
        # the reference reads the bytecode its install compiled, in its own venv
        if "PYTHONDONTWRITEBYTECODE" in os.environ:
            env["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
        return run_child([self.ref_py, str(HERE / "reference_synix.py"), "build", str(proj),
                          "-j", str(concurrency)], env, proj)

    def record(self, scenario: str, n: int, ours: list[dict], ref: list[dict]) -> None:
        o = statistics.median(r["seconds"] for r in ours)
        f = statistics.median(r["seconds"] for r in ref)
        rss_o = max(r["rss_mb"] for r in ours)
        rss_f = max(r["rss_mb"] for r in ref)
        ratio = o / f if f else float("nan")
        cpu_o = statistics.median(r["cpu_s"] for r in ours)
        cpu_f = statistics.median(r["cpu_s"] for r in ref)
        target = TARGETS.get(scenario)
        verdicts = []
        if target is not None:
            verdicts.append(f"≤ {target}× ref: {'met' if ratio <= target else 'missed'}")
        if (scenario, n) in ABSOLUTE:
            kind, limit = ABSOLUTE[(scenario, n)]
            value = rss_o if kind == "rss" else o
            unit = "MB RSS" if kind == "rss" else "s"
            verdicts.append(f"≤ {limit:g} {unit}: {'met' if value <= limit else 'missed'}")
        calls = ours[-1].get("report", {}).get("llm_calls", "")
        row = {"scenario": scenario, "n": n, "ours_s": o, "ref_s": f, "ratio": ratio,
               "ours_runs": [round(r["seconds"], 2) for r in ours],
               "ref_runs": [round(r["seconds"], 2) for r in ref], "ours_rss": rss_o,
               "ref_rss": rss_f, "ours_cpu": cpu_o, "ref_cpu": cpu_f, "llm_calls": calls, "verdict": "; ".join(verdicts),
               "load": " / ".join(sorted({r["load"] for r in ours + ref}))}
        self.rows.append(row)
        print(f"  {scenario:20s} N={n:<6} ours {o:7.2f} s {row['ours_runs']} rss {rss_o:.0f} cpu {cpu_o:.1f}  "
              f"ref {f:7.2f} s {row['ref_runs']} rss {rss_f:.0f} cpu {cpu_f:.1f}  ratio {ratio:.2f}  "
              f"{row['verdict']}  [{row['load']}]", file=sys.stderr)

    def timed(self, fn, *a) -> dict:
        before = load()
        res = fn(*a)
        res["load"] = before
        return res

    def size(self, n: int) -> None:
        args = self.args
        base = self.out / f"n{n}"
        shutil.rmtree(base, ignore_errors=True)
        data = base / "data"
        export = generate(n, MONTHS, SEED, "chatgpt", data / "conversations.json")
        more = data / "more-conversations.json"
        generate(10, MONTHS, SEED + 1000 + n, "chatgpt", more)
        print(f"N={n}: export {export['bytes'] / 1e6:.1f} MB  {load()}  code {git_rev()}", file=sys.stderr)
        fresh_o, fresh_f = base / "fresh-ours", base / "fresh-ref"
        self.init_ours(fresh_o, data / "conversations.json")
        reference_synix.init_project(fresh_f, [data / "conversations.json"])
        work_o, work_f = base / "ours", base / "ref"
        conc = args.concurrency or 16

        def copy(src: Path, dst: Path) -> Path:
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, symlinks=True)
            return dst

        cold_reps = args.cold_repeat if args.cold_repeat is not None else (args.repeat if n <= 2000 else 1)
        ours, ref = [], []
        for i in range(cold_reps):
            fresh = copy(fresh_o, work_o) if self.bouncer is None or i == 0 else \
                self.init_ours(work_o, data / "conversations.json")
            ours.append(self.timed(self.ours, fresh))
            ref.append(self.timed(self.ref, copy(fresh_f, work_f), conc))
        self.record("cold build", n, ours, ref)
        built_o, built_f = copy(work_o, base / "built-ours"), copy(work_f, base / "built-ref")
        ours, ref = [], []
        for _ in range(args.repeat):
            ours.append(self.timed(self.ours, work_o))
            ref.append(self.timed(self.ref, work_f, conc))
        self.record("no-op rebuild", n, ours, ref)
        assert ours[-1]["report"]["llm_calls"] == 0, "a no-op rebuild made LLM calls"
        ours, ref = [], []
        for _ in range(args.repeat):
            shutil.copy2(more, copy(built_o, work_o) / "exports" / more.name)
            ours.append(self.timed(self.ours, work_o))
            shutil.copy2(more, copy(built_f, work_f) / "sources" / more.name)
            ref.append(self.timed(self.ref, work_f, conc))
        self.record("+10 conversations", n, ours, ref)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    def llm_bound(self, n: int, months: int, latency: float, concurrency: int) -> None:
        base = self.out / f"llm-{n}"
        shutil.rmtree(base, ignore_errors=True)
        generate(n, months, SEED, "chatgpt", base / "conversations.json")
        env = {**self.env, "SYNIX_FAKE_LATENCY_S": str(latency),
               "SYNIX_LLM_CONCURRENCY": str(concurrency)}
        ours, ref = [], []
        for i in range(self.args.repeat):
            proj = self.init_ours(base / f"ours{i}", base / "conversations.json", env)
            ours.append(self.timed(self.ours, proj, env))
            rproj = reference_synix.init_project(base / f"ref{i}", [base / "conversations.json"])
            ref.append(self.timed(self.ref, rproj, concurrency, env))
        # the episodes in waves of `concurrency`, then one latency for the last month's rollup
        # and one for the fold's last step (its earlier steps overlap the episodes: each month
        # is folded as soon as its rollup exists) — the bound, same as bench_build's
        ideal = -(-n // concurrency) * latency + 2 * latency
        scenario = f"LLM-bound {latency:g} s x{concurrency}"
        self.record(scenario, n, ours, ref)
        o = self.rows[-1]["ours_s"]
        self.rows[-1]["verdict"] = (f"ideal {ideal:.2f} s, ≤ 1.25× ideal = {1.25 * ideal:.2f} s: "
                                    f"{'met' if o <= 1.25 * ideal else 'missed'} ({o / ideal:.2f}× ideal)")
        print(f"    {self.rows[-1]['verdict']}", file=sys.stderr)
        if not self.args.keep:
            shutil.rmtree(base, ignore_errors=True)


def _bytecode_cache(env: dict) -> dict:
    """Compiled bytecode for our side, as the reference has from its pip install: this
    repository is run from its source tree, and where PYTHONDONTWRITEBYTECODE is set (as on the
    shared machine) every `synix` process compiled each of its ~180 modules again (~0.2 CPU s a
    no-op, measured in session 14). Compiled once, before any timing, into the tree's
    `__pycache__` folders (ignored by git); installed packages keep their own."""
    extra = {"PYTHONDONTWRITEBYTECODE": ""}
    root = HERE.parent
    run_child([PY, "-m", "compileall", "-q", str(root / "synix"), str(root / "synix_assets"),
               str(root / "synix_resources")], {**env, **extra}, root)
    return extra


def render(c: Compare) -> str:
    lines = [f"### Synix (Dagster storage: {c.args.dagster_storage}) vs reference Synix "
             f"{reference_synix.VERSION} (latency {c.args.latency} s, "
             f"code {git_rev()}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared)", "",
             "| scenario | N | ours s (median) | reference s (median) | ours / ref | ours peak RSS MB | "
             "ref peak RSS MB | ours / ref CPU s | LLM calls | target | load (1/5/15 min) at each run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in c.rows:
        lines.append(f"| {r['scenario']} | {r['n']:,} | {r['ours_s']:.2f} {r['ours_runs']} | "
                     f"{r['ref_s']:.2f} {r['ref_runs']} | {r['ratio']:.2f} | {r['ours_rss']:.0f} | "
                     f"{r['ref_rss']:.0f} | {r['ours_cpu']:.1f} / {r['ref_cpu']:.1f} | {r['llm_calls']} | {r['verdict']} | {r['load']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000", help="comma-separated conversation counts")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=0,
                        help="LLM concurrency for both (0: each one's default; ours 16, ref -j 16)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold-repeat", type=int, default=None,
                        help="cold builds per side (default: --repeat up to 2,000, else 1)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--skip-llm-bound", action="store_true")
    parser.add_argument("--llm-bound-only", action="store_true")
    parser.add_argument("--no-bytecode", action="store_true",
                        help="ours without a bytecode cache (as before session 14, where "
                             "PYTHONDONTWRITEBYTECODE is set)")
    parser.add_argument("--big-llm", action="store_true", help="also 2,000 at 1 s, concurrency 32")
    parser.add_argument("--dagster-storage", choices=("sqlite", "pgbouncer"), default="sqlite",
                        help="ours: Dagster's storage on the SQLite default, or on PostgreSQL "
                             "behind PgBouncer (docs/postgres.md)")
    args = parser.parse_args(argv)
    tmp = None
    if args.out is None:
        tmp = args.out = tempfile.mkdtemp(prefix="synix-compare-")
    c = Compare(args)
    print(f"bench_compare: out={c.out} reference={c.ref_py} {load()} code {git_rev()}", file=sys.stderr)
    try:
        if not args.llm_bound_only:
            for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
                c.size(n)
        if not args.skip_llm_bound:
            c.llm_bound(200, 6, 0.3, 20)
            if args.big_llm:
                c.llm_bound(2000, 24, 1.0, 32)
        text = render(c)
        (c.out / "compare.json").write_text(json.dumps({"rows": c.rows, "args": vars(args)}, indent=2))
        (c.out / "compare.md").write_text(text + "\n")
        print(text)
    finally:
        c.close()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
