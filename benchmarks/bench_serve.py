"""Latency of `synix serve` at scale: p50/p95 of /v1/search and /v1/brief (and of the explorer's
pages) over real HTTP against a real server process, for projects of N synthetic conversations.

    python benchmarks/bench_serve.py --sizes 2000,10000 [--queries 60] [--out DIR]

Each size: a seeded ChatGPT export (generate_exports.py), `synix init` + `synix run` with the
deterministic fake LLM (a built project in DIR/nN is reused), then `synix serve` on a free
loopback port; every request opens a fresh connection, as a separate client would. Prints a
Markdown table and writes DIR/bench_serve.json.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate_exports import generate  # noqa: E402 (benchmark-local module)

PY = sys.executable
QUERIES = ["marathon taper week", "borrow checker", "sourdough starter hydration", "lease in the Mission",
           "salary negotiation", "episodic memory", "heart-rate zones", "cargo workspaces",
           "security deposit", "prompt caching", "the take-home exercise", "Dutch oven"]
TARGET_S = 1.0  # "pages render well under a second"


def synix(*args: str) -> list[str]:
    return [PY, "-m", "synix_assets.cli", *args]


def build(root: Path, n: int) -> float:
    """Generate and build a project of n conversations (reused when already built); seconds."""
    if (root / ".synix" / "search.db").exists():
        return 0.0
    export = root.parent / f"export-{n}.json"
    generate(n, 24, 7, "chatgpt", export)
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "SYNIX_FAKE_LATENCY_S": "0"}
    subprocess.run(synix("init", str(root), "--from", str(export)), check=True, env=env,
                   stdout=subprocess.DEVNULL)
    started = time.perf_counter()
    subprocess.run(synix("-p", str(root), "run"), check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str) -> tuple[int, float, int]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
    finally:
        conn.close()
    return resp.status, time.perf_counter() - started, len(body)


def serve(root: Path):
    port = free_port()
    proc = subprocess.Popen(synix("-p", str(root), "serve", "--port", str(port)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if get(port, "/v1/layers")[0] == 200:
                return proc, port
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"synix serve exited: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("synix serve did not answer within 120 s")


def measure(port: int, paths: list[str]) -> dict:
    times = []
    for path in paths:
        status, seconds, _ = get(port, path)
        if status != 200:
            raise SystemExit(f"GET {path} answered {status}")
        times.append(seconds)
    times.sort()
    return {"n": len(times), "p50_ms": round(statistics.median(times) * 1000, 1),
            "p95_ms": round(times[max(0, int(len(times) * 0.95) - 1)] * 1000, 1),
            "max_ms": round(times[-1] * 1000, 1)}


def bench_size(out: Path, n: int, queries: int) -> dict:
    root = out / f"n{n}" / "mem"
    root.parent.mkdir(parents=True, exist_ok=True)
    build_s = build(root, n)
    proc, port = serve(root)
    try:
        qs = [QUERIES[i % len(QUERIES)] for i in range(queries)]
        for q in QUERIES[:3]:  # warm the pool and the OS cache
            get(port, f"/v1/search?q={quote(q)}")
            get(port, f"/v1/brief?query={quote(q)}")
        layers = json.loads(_body(port, "/v1/layers"))["layers"]
        pages = {l["layer"]: max(1, -(-l["records"] // 50)) for l in layers}
        return {
            "conversations": n, "build_s": round(build_s, 1),
            "/v1/search": measure(port, [f"/v1/search?q={quote(q)}&limit=10" for q in qs]),
            "/v1/brief": measure(port, [f"/v1/brief?query={quote(q)}&budget_tokens=2000" for q in qs]),
            "/explore?q=": measure(port, [f"/explore?q={quote(q)}" for q in qs[:max(5, queries // 3)]]),
            "/layers/episodes?page=": measure(port, [f"/layers/episodes?page={1 + (i * 37) % pages['episodes']}"
                                                     for i in range(max(5, queries // 3))]),
            "/explore": measure(port, ["/explore"] * 5),
            "/pipeline": measure(port, ["/pipeline"] * 5),
            "/context": measure(port, ["/context"] * 5),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _body(port: int, path: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path)
        return conn.getresponse().read()
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2000,10000", help="Comma-separated conversation counts.")
    ap.add_argument("--queries", type=int, default=60, help="Requests per endpoint and size.")
    ap.add_argument("--out", default=None, help="Folder for the projects (reused between runs).")
    args = ap.parse_args(argv)
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_serve_")).resolve()
    results = [bench_size(out, int(n), args.queries) for n in args.sizes.split(",")]
    (out / "bench_serve.json").write_text(json.dumps(results, indent=2))
    print(f"| endpoint | conversations | p50 ms | p95 ms | max ms | under {TARGET_S:g} s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        for key in ("/v1/search", "/v1/brief", "/explore?q=", "/layers/episodes?page=", "/explore",
                    "/pipeline", "/context"):
            m = r[key]
            print(f"| {key} | {r['conversations']:,} | {m['p50_ms']} | {m['p95_ms']} | {m['max_ms']} | "
                  f"{'yes' if m['p95_ms'] < TARGET_S * 1000 else 'NO'} |")
    print(f"\nprojects and JSON in {out}; build seconds (fake LLM): "
          + ", ".join(f"{r['conversations']:,}: {r['build_s']}" for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
