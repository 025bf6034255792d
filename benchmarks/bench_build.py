"""Build benchmarks on the real stack: `synix run --json` processes, Dagster on a real SQLite
DAGSTER_HOME, Synix's store and search index, and the `fake` LLM provider.

    python benchmarks/bench_build.py --sizes 500,2000 [--latency 0] [--out DIR] [--repeat 3]
    python benchmarks/bench_build.py --sizes 10000 --repeat 1 --skip-parse --skip-llm-bound
    python benchmarks/bench_build.py --sizes 2000 --patch engine       # measure a prototype fix

Per size N (default monthly pipeline from `synix init`, exports spread over 24 months):
cold build; no-op rebuild; +10 conversations (a new export file in existing months); monthly
prompt changed (pipeline.py switched to a changed copy of the monthly prompt); search p50/p95
in-process (`SearchIndex.search`) and per CLI process (`synix search --json`), fts and hybrid.
Every build is a fresh process timed from the outside; its peak RSS comes from `os.wait4`. The
time split (Dagster / LLM / store / index / parse / other Synix code) comes from a pyinstrument
profile of one in-process `run_build` per scenario, run from the same starting state. Plus the
LLM-bound case (200 conversations, 6 months, fake latency 0.3 s, 20 concurrent requests) and
`bench_parse.py`. Benchmarks are not tests; nothing here is run by the test suite.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate_exports import generate  # noqa: E402 (benchmark-local module)

PY = sys.executable
SYNIX = str(Path(PY).parent / "synix")
MONTHS = 24
SEED = 7
QUERIES = ["marathon taper week", "borrow checker", "sourdough starter hydration", "Roth IRA",
           "lease in the Mission", "equity vesting offer", "retrieval-augmented generation",
           "flight to Lisbon", "clap argument parsing", "emergency fund budget"]
TARGETS = {  # (scenario, size) -> seconds; size None = every size
    ("no-op rebuild", 2000): 1.5, ("no-op rebuild", 10000): 3.0, ("+10 conversations", 2000): 3.0,
    ("cold build", 2000): 15.0, ("search in-process fts", 10000): 0.05,
    ("search in-process hybrid", 10000): 0.05, ("search CLI fts", None): 0.6,
    ("search CLI hybrid", None): 0.6}
REFERENCE = {  # the other implementation (no orchestrator, file store), zero-latency mock
    ("cold build", 500): 4.65, ("cold build", 2000): 17.65, ("no-op rebuild", 500): 1.86,
    ("no-op rebuild", 2000): 8.70, ("+10 conversations", 500): 2.62,
    ("+10 conversations", 2000): 9.67, ("search CLI hybrid", 500): 0.31,
    ("search CLI hybrid", 2000): 1.29, ("LLM-bound 200 @ 0.3 s x20", 200): 6.7}
CHANGED_PROMPT = '''

# --- bench_build.py: a changed copy of the monthly prompt -----------------------------------
def monthly_rollup_changed(records, period):
    return prompts.monthly_rollup(records, period) + "\\nEnd with one open question for next month."


pipeline.steps["monthly"].prompt = monthly_rollup_changed
'''

_CLI_SHIM = """import sys
sys.path.insert(0, sys.argv.pop(1))
import prototype_fixes
prototype_fixes.apply()
from synix_assets.cli.main import main
sys.argv[0] = "synix"
main()
"""

_PROFILE_CHILD = """import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import prototype_fixes
prototype_fixes.apply()
from pathlib import Path
from pyinstrument import Profiler
root, session_path, llm_config = Path(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
profiler = Profiler(interval=0.002)
profiler.start()
started = time.perf_counter()
from synix_assets.app.run import run_build
from synix_assets.project import ProjectPaths
report = run_build(ProjectPaths(root.resolve()), llm_config=llm_config or None)
seconds = time.perf_counter() - started
profiler.stop()
profiler.last_session.save(session_path)
from bench_build import time_split
print(json.dumps({"seconds": seconds, "llm_calls": report.to_json()["llm_calls"],
                  "split": time_split(profiler.last_session)}))
"""

_SEARCH_CHILD = """import json, statistics, sys, time
from synix_resources.search.index import SearchIndex
path, queries, reps = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
out = {}
for mode in ("fts", "hybrid"):
    index = SearchIndex(path, embeddings="auto" if mode != "fts" else False)
    index.search(queries[0], mode=mode, limit=10)  # warm: first query pays page-cache and setup
    times, used, notice = [], set(), None
    for _ in range(reps):
        for q in queries:
            t = time.perf_counter()
            res = index.search(q, mode=mode, limit=10)
            times.append(time.perf_counter() - t)
            used.add(res.mode)
            notice = notice or getattr(res, "notice", None)
    index.close()
    times.sort()
    out[mode] = {"p50": statistics.median(times), "p95": times[int(0.95 * (len(times) - 1))],
                 "n": len(times), "used": sorted(used), "notice": notice}
print(json.dumps(out))
"""

_LLM_BOUND_CHILD = """import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import prototype_fixes
prototype_fixes.apply()
from pathlib import Path
started = time.perf_counter()
from synix_assets.app.run import run_build
from synix_assets.project import ProjectPaths
imported = time.perf_counter()
report = run_build(ProjectPaths(Path(sys.argv[2]).resolve()), llm_config={"concurrency": int(sys.argv[3])})
done = time.perf_counter()
print(json.dumps({"run_build_s": done - imported, "process_s": done - started,
                  "llm_calls": report.to_json()["llm_calls"], "layers": report.to_json()["layers"]}))
"""

CATEGORIES = [("synix_resources/llm", "llm"), ("synix_resources/store", "store"),
              ("synix_resources/search", "index"), ("synix_assets/parsers", "parse"),
              ("site-packages/dagster", "dagster"), ("synix_assets/", "synix"),
              ("synix_resources/", "synix")]
SPLIT_KEYS = ["dagster", "llm", "store", "index", "parse", "synix", "other"]


def time_split(session) -> dict:
    """Seconds of a pyinstrument session by the innermost categorised frame on each stack:
    Dagster's own code (incl. its SQLAlchemy/SQLite event writes), the LLM resource, the artifact
    store, the search index, the parsers, other Synix code (engine, CLI, pipeline), other."""
    totals: dict[str, float] = {}
    stack = [(session.root_frame(), "other")]
    while stack:
        frame, inherited = stack.pop()
        path = frame.file_path or ""
        cat = next((name for frag, name in CATEGORIES if frag in path), inherited)
        own = frame.time - sum(child.time for child in frame.children)
        totals[cat] = totals.get(cat, 0.0) + own
        stack.extend((child, cat) for child in frame.children)
    return {k: round(totals.get(k, 0.0), 3) for k in SPLIT_KEYS}


# -- processes -------------------------------------------------------------------------------

def git_rev() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(HERE), "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
    except OSError:
        rev = ""
    return rev or "unknown"


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def run_child(argv: list[str], env: dict, cwd: Path | None = None) -> dict:
    """Run one process; wall seconds, that child's own peak RSS (os.wait4) and its output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        # CPU seconds (user + system, every thread): on a shared machine the wall time grows with
        # the load, the CPU time much less, so it tells two codes apart when the load drifts
        result = {"seconds": seconds, "rss_mb": usage.ru_maxrss / 1024.0, "rc": proc.returncode,
                  "cpu_s": usage.ru_utime + usage.ru_stime,
                  "stdout": out.read().decode(errors="replace"),
                  "stderr": err.read().decode(errors="replace")}
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(argv[:4])} … failed ({result['rc']}):\n{result['stderr'][-3000:]}")
    return result


class Bench:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out).resolve()
        self.rows: list[dict] = []
        self.splits: list[dict] = []
        self.storage: list[dict] = []
        self.notes: list[str] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "DAGSTER_"))}
        self.env.update(SYNIX_LLM_PROVIDER="fake", SYNIX_FAKE_LATENCY_S=str(args.latency),
                        PYTHONWARNINGS="ignore", SYNIX_BENCH_PATCH=args.patch or "")

    def synix(self, *argv: str, cwd: Path, patch: str | None = None) -> dict:
        patch = self.args.patch if patch is None else patch
        env = {**self.env, "SYNIX_BENCH_PATCH": patch or ""}
        cmd = [PY, "-c", _CLI_SHIM, str(HERE), *argv] if patch else [SYNIX, *argv]
        return run_child(cmd, env, cwd)

    def profile(self, root: Path, name: str, llm_config: dict | None = None) -> dict:
        session = self.out / "profiles" / f"{name}.pyisession"
        session.parent.mkdir(parents=True, exist_ok=True)
        res = run_child([PY, "-c", _PROFILE_CHILD, str(HERE), str(root), str(session),
                         json.dumps(llm_config or {})], self.env)
        data = json.loads(res["stdout"].strip().splitlines()[-1])
        self.splits.append({"name": name, "seconds": data["seconds"], **data["split"], "load": load()})
        return data

    def row(self, scenario: str, size: int, times: list[float], *, llm_calls="", runs="", rss=None,
            shown: str | None = None, target: float | None = None, value: float | None = None):
        value = statistics.median(times) if value is None and times else value
        target = target if target is not None else TARGETS.get((scenario, size), TARGETS.get((scenario, None)))
        met = "" if target is None else ("met" if value <= target else "missed")
        self.rows.append({"scenario": scenario, "size": size, "seconds": value, "shown": shown,
                          "runs_s": [round(t, 3) for t in times], "llm_calls": llm_calls,
                          "dagster_runs": runs, "rss_mb": rss, "target": target, "met": met,
                          "reference": REFERENCE.get((scenario, size)), "load": load()})
        print(f"  {scenario:28s} N={size:<6} {shown or f'{value:.2f} s'}  runs={[round(t, 2) for t in times]} "
              f"llm={llm_calls} dagster_runs={runs} rss={rss and round(rss)} MB  {load()}", file=sys.stderr)

    # -- one size ---------------------------------------------------------------------------

    def size(self, n: int) -> None:
        args, reps = self.args, self.args.repeat
        base = self.out / f"n{n}"
        if base.exists():
            shutil.rmtree(base)
        data = base / "data"
        export = generate(n, MONTHS, SEED, "chatgpt", data / "conversations.json")
        generate(10, MONTHS, SEED + 1000 + n, "chatgpt", data / "more-conversations.json")
        print(f"N={n}: export {export['bytes'] / 1e6:.1f} MB  {load()} code {git_rev()}", file=sys.stderr)
        proj = base / "proj"
        run_child([SYNIX, "init", str(proj), "--from", str(data / "conversations.json")], self.env)
        snaps = base / "snapshots"
        snap = lambda name: shutil.copytree(proj, snaps / name, symlinks=True)  # noqa: E731
        def restore(name: str) -> None:
            shutil.rmtree(proj)
            shutil.copytree(snaps / name, proj, symlinks=True)

        def build(label: str, patch: str | None = None) -> dict:
            before = dagster_runs(proj)
            res = self.synix("run", "--json", cwd=proj, patch=patch)
            report = json.loads(res["stdout"])
            res.update(llm_calls=report["llm_calls"], dagster_runs=dagster_runs(proj) - before,
                       report=report)
            return res

        # cold build (once: a cold build at N is the expensive part of the whole benchmark)
        snap("fresh")
        cold_patch = args.cold_patch if args.cold_patch is not None else args.patch
        r = build("cold", patch=cold_patch)
        label = "cold build" + (f" [patch {cold_patch}]" if cold_patch and cold_patch != args.patch else "")
        self.row(label, n, [r["seconds"]], llm_calls=r["llm_calls"], runs=r["dagster_runs"], rss=r["rss_mb"])
        self.storage.append({"size": n, "when": "after cold build", **storage_bytes(proj)})
        snap("built")
        if args.profile and n <= args.profile_cold_max:
            restore("fresh")
            self.profile(proj, f"n{n}-cold")
            restore("built")

        only = set(args.scenarios.split(","))
        if only == {"cold"}:
            return
        # no-op rebuild
        rs = [build("noop") for _ in range(reps)]
        self.row("no-op rebuild", n, [x["seconds"] for x in rs], llm_calls=rs[-1]["llm_calls"],
                 runs=rs[-1]["dagster_runs"], rss=max(x["rss_mb"] for x in rs))
        if args.profile:
            self.profile(proj, f"n{n}-noop")

        # +10 conversations in existing months
        rs = []
        for i in range(reps):
            if i:
                restore("built")
            shutil.copy2(data / "more-conversations.json", proj / "exports" / "more-conversations.json")
            rs.append(build("+10"))
        self.row("+10 conversations", n, [x["seconds"] for x in rs], llm_calls=rs[-1]["llm_calls"],
                 runs=rs[-1]["dagster_runs"], rss=max(x["rss_mb"] for x in rs))
        snap("plus10")
        if args.profile:
            restore("built")
            shutil.copy2(data / "more-conversations.json", proj / "exports" / "more-conversations.json")
            self.profile(proj, f"n{n}-plus10")
            restore("plus10")

        # monthly prompt changed
        rs = []
        for i in range(reps):
            if i:
                restore("plus10")
            with open(proj / "pipeline.py", "a", encoding="utf-8") as fh:
                fh.write(CHANGED_PROMPT)
            rs.append(build("prompt"))
        self.row("monthly prompt changed", n, [x["seconds"] for x in rs], llm_calls=rs[-1]["llm_calls"],
                 runs=rs[-1]["dagster_runs"], rss=max(x["rss_mb"] for x in rs))
        if args.profile:
            restore("plus10")
            with open(proj / "pipeline.py", "a", encoding="utf-8") as fh:
                fh.write(CHANGED_PROMPT)
            self.profile(proj, f"n{n}-monthly-prompt")
        self.storage.append({"size": n, "when": "after all builds", **storage_bytes(proj)})

        # search: in-process, then one CLI process per query
        res = run_child([PY, "-c", _SEARCH_CHILD, str(proj / ".synix" / "search.db"),
                         json.dumps(QUERIES), str(max(reps, 3) * 3)], self.env)
        inproc = json.loads(res["stdout"])
        for mode, d in inproc.items():
            ran = "+".join(d["used"])
            self.row(f"search in-process {mode}", n, [], value=d["p50"], rss=res["rss_mb"],
                     shown=f"p50 {d['p50'] * 1000:.1f} ms / p95 {d['p95'] * 1000:.1f} ms (ran {ran}, n={d['n']})")
        for mode in ("fts", "hybrid"):
            times, ran, notice, rss = [], set(), None, 0.0
            for i in range(max(reps, 3) * 2):
                q = QUERIES[i % len(QUERIES)]
                res = self.synix("search", q, "--json", "--mode", mode, cwd=proj, patch="")
                got = json.loads(res["stdout"])
                times.append(res["seconds"])
                ran.add(got["mode"])
                notice = notice or got.get("notice")
                rss = max(rss, res["rss_mb"])
            times.sort()
            p95 = times[int(0.95 * (len(times) - 1))]
            self.row(f"search CLI {mode}", n, times, rss=rss,
                     shown=f"p50 {statistics.median(times):.2f} s / p95 {p95:.2f} s (ran {'+'.join(sorted(ran))})")
            if notice:
                self.notes.append(f"N={n} `synix search --mode {mode}`: ran {'+'.join(sorted(ran))}; notice: {notice}")
        if not args.keep:
            shutil.rmtree(snaps)

    # -- LLM-bound and parsing -----------------------------------------------------------------

    def llm_bound(self, n=200, months=6, latency=0.3, concurrency=20) -> None:
        base = self.out / "llm-bound"
        if base.exists():
            shutil.rmtree(base)
        generate(n, months, SEED, "chatgpt", base / "conversations.json")
        proj = base / "proj"
        run_child([SYNIX, "init", str(proj), "--from", str(base / "conversations.json")], self.env)
        env = {**self.env, "SYNIX_FAKE_LATENCY_S": str(latency)}
        res = run_child([PY, "-c", _LLM_BOUND_CHILD, str(HERE), str(proj), str(concurrency)], env)
        data = json.loads(res["stdout"].strip().splitlines()[-1])
        waves = -(-n // concurrency)
        ideal = waves * latency + 2 * latency  # episodes in waves + one latency for monthly, one for core
        ideal_seq_fold = waves * latency + latency + months * latency  # the fold is sequential
        self.row("LLM-bound 200 @ 0.3 s x20", n, [data["run_build_s"]], llm_calls=data["llm_calls"],
                 rss=res["rss_mb"], target=1.25 * ideal)
        self.notes.append(f"LLM-bound: run_build {data['run_build_s']:.2f} s (whole process "
                          f"{data['process_s']:.2f} s, {res['seconds']:.2f} s with interpreter start); "
                          f"ideal bound {ideal:.1f} s (target 1.25x = {1.25 * ideal:.2f} s); with the "
                          f"{months}-month fold sequential the floor is {ideal_seq_fold:.1f} s")

    def parse(self) -> str:
        res = run_child([PY, str(HERE / "bench_parse.py")], self.env)
        return res["stdout"]


def dagster_runs(proj: Path) -> int:
    db = proj / ".synix" / "dagster" / "history" / "runs.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        conn.close()


def storage_bytes(proj: Path) -> dict:
    state = proj / ".synix"
    size = lambda paths: sum(p.stat().st_size for p in paths if p.is_file())  # noqa: E731
    return {"synix.db*": size(state.glob("synix.db*")), "search.db*": size(state.glob("search.db*")),
            "dagster/": size((state / "dagster").rglob("*")),
            "events": _count(state / "dagster" / "event_log.db", "SELECT COUNT(*) FROM event_logs")}


def _count(db: Path, sql: str):
    if not db.exists():
        return ""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def render(bench: Bench, parse_table: str | None) -> str:
    mb = lambda b: f"{b / 1e6:.1f}"  # noqa: E731
    lines = []
    if bench.splits:
        lines += ["### Where the time goes (pyinstrument, one in-process `run_build` per scenario, seconds)",
                  "", "| profile | run_build s | " + " | ".join(SPLIT_KEYS) + " | load |",
                  "|---|---:|" + "---:|" * len(SPLIT_KEYS) + "---|"]
        lines += [f"| {s['name']} | {s['seconds']:.2f} | " + " | ".join(f"{s[k]:.2f}" for k in SPLIT_KEYS)
                  + f" | {s['load']} |" for s in bench.splits]
        lines.append("")
    if bench.storage:
        lines += ["### Storage (bytes on disk)", "",
                  "| N | when | .synix/synix.db* MB | .synix/search.db* MB | .synix/dagster/ MB | Dagster events |",
                  "|---:|---|---:|---:|---:|---:|"]
        lines += [f"| {s['size']:,} | {s['when']} | {mb(s['synix.db*'])} | {mb(s['search.db*'])} | "
                  f"{mb(s['dagster/'])} | {s['events']} |" for s in bench.storage]
        lines.append("")
    if parse_table:
        lines += ["### Parsing (`benchmarks/bench_parse.py`)", "", parse_table.strip(), ""]
    if bench.notes:
        lines += ["### Notes", ""] + [f"- {n}" for n in bench.notes] + [""]
    lines += [f"### Builds and searches (latency {bench.args.latency} s, patch: {bench.args.patch or 'none'}, "
              f"python {sys.version.split()[0]}, code {git_rev()})", "",
              "| scenario | N | seconds | LLM calls | Dagster runs | peak RSS MB | target | met | reference | load |",
              "|---|---:|---|---:|---:|---:|---:|---|---:|---|"]
    for r in bench.rows:
        shown = r["shown"] or f"{r['seconds']:.2f}" + (f" (median of {len(r['runs_s'])})" if len(r["runs_s"]) > 1 else "")
        target = "" if r["target"] is None else (f"≤ {r['target'] * 1000:.0f} ms p50" if r["target"] < 0.5
                                                 else f"≤ {r['target']:.2f} s")
        lines.append(f"| {r['scenario']} | {r['size']:,} | {shown} | {r['llm_calls']} | {r['dagster_runs']} | "
                     f"{'' if r['rss_mb'] is None else round(r['rss_mb'])} | {target} | {r['met']} | "
                     f"{'' if r['reference'] is None else r['reference']} | {r['load']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000", help="comma-separated conversation counts")
    parser.add_argument("--latency", type=float, default=0.0, help="fake LLM latency per call, seconds")
    parser.add_argument("--out", default=None, help="working folder (default: a temp dir, removed)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (median); cold runs once")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="skip the pyinstrument runs")
    parser.add_argument("--profile-cold-max", type=int, default=2000,
                        help="profile the cold build only up to this size (it doubles its cost)")
    parser.add_argument("--patch", default="", help="prototype fixes from prototype_fixes.py, e.g. keeper")
    parser.add_argument("--cold-patch", default=None,
                        help="patch for the cold build only (e.g. keeper, to build a big store in time)")
    parser.add_argument("--scenarios", default="all", help="'cold' = only the cold build per size")
    parser.add_argument("--skip-llm-bound", action="store_true")
    parser.add_argument("--skip-parse", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the per-scenario snapshots")
    args = parser.parse_args(argv)
    tmp = None
    if args.out is None:
        tmp = tempfile.mkdtemp(prefix="synix-bench-")
        args.out = tmp
    bench = Bench(args)
    print(f"bench_build: out={bench.out} {load()} cpus={os.cpu_count()} code {git_rev()}", file=sys.stderr)
    try:
        for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
            bench.size(n)
        if not args.skip_llm_bound:
            bench.llm_bound()
        parse_table = None if args.skip_parse else bench.parse()
        text = render(bench, parse_table)
        (bench.out / "results.json").write_text(json.dumps(
            {"rows": bench.rows, "splits": bench.splits, "storage": bench.storage, "notes": bench.notes,
             "args": vars(args)}, indent=2, default=str))
        (bench.out / "results.md").write_text(text + "\n")
        print(text)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
