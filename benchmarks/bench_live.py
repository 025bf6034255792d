"""Live ingest under load: N concurrent clients posting turns to a real `synix serve --home`
process over loopback for a bounded time, while its worker builds the sessions they close.

    python benchmarks/bench_live.py [--clients 50] [--seconds 60] [--turns 2] [--close-every 5] [--out DIR]

Each client keeps one HTTP connection, posts requests of `--turns` turns with an idempotency key
(one session per `--close-every` requests, then closes it) and records each request's latency.
After the run the server is stopped and the inbox is read directly: every acknowledged turn id
must be there exactly once (lost = acknowledged but missing; duplicated = stored more than once
or stored without being acknowledged). Prints a Markdown table and writes DIR/bench_live.json.
Fake LLM, so builds cost CPU but no network.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PY = sys.executable


def synix(*args: str) -> list[str]:
    return [PY, "-m", "synix_assets.cli", *args]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client(threading.Thread):
    def __init__(self, n: int, port: int, token: str, deadline: float, turns: int, close_every: int):
        super().__init__(daemon=True)
        self.n, self.port, self.token, self.deadline = n, port, token, deadline
        self.turns, self.close_every = turns, close_every
        self.latencies: list[float] = []
        self.acked: list[str] = []
        self.errors: list[str] = []
        self.closed = 0

    def _post(self, conn, path: str, body: dict | None, key: str | None) -> dict:
        raw = json.dumps(body).encode() if body is not None else b""
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        conn.request("POST", path, body=raw, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{resp.status}: {data[:200]!r}")
        return json.loads(data)

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        k = r = 0
        while time.monotonic() < self.deadline:
            sid = f"c{self.n}-s{k}"
            body = {"session_id": sid, "turns": [
                {"role": "user" if i % 2 == 0 else "assistant", "content": f"{sid} r{r} turn {i}: "
                 "planning the week, the marathon long run and the grocery list"} for i in range(self.turns)]}
            started = time.perf_counter()
            try:
                answer = self._post(conn, "/v1/tenants/bench/ingest", body, f"{sid}-r{r}")
            except (OSError, RuntimeError, http.client.HTTPException) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                continue
            self.latencies.append(time.perf_counter() - started)
            self.acked.extend(answer["turn_ids"])
            r += 1
            if r % self.close_every == 0:
                try:
                    self._post(conn, f"/v1/tenants/bench/sessions/{sid}/close", None, None)
                    self.closed += 1
                except (OSError, RuntimeError, http.client.HTTPException) as exc:
                    self.errors.append(f"close: {exc}")
                k += 1
        conn.close()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--turns", type=int, default=2, help="turns per request")
    ap.add_argument("--close-every", type=int, default=5, help="requests per session before it is closed")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_live_"))
    out.mkdir(parents=True, exist_ok=True)
    home = out / "home"
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "SYNIX_FAKE_LATENCY_S": "0",
           "SYNIX_LIVE_IDLE_MINUTES": "60"}
    env.pop("DAGSTER_HOME", None)
    token = json.loads(subprocess.run(synix("tenant", "create", "bench", "--home", str(home), "--json"),
                                      check=True, capture_output=True, text=True, env=env).stdout)["token"]
    port = free_port()
    log = open(out / "serve.log", "wb")
    server = subprocess.Popen(synix("serve", "--home", str(home), "--port", str(port)), stdout=log,
                              stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the server did not start; see serve.log")
            time.sleep(0.3)
        started = time.monotonic()
        clients = [Client(n, port, token, started + args.seconds, args.turns, args.close_every)
                   for n in range(args.clients)]
        for c in clients:
            c.start()
        for c in clients:
            c.join(timeout=args.seconds + 120)  # bounded: a stuck client is reported, not waited on
        wall = time.monotonic() - started
        stuck = sum(1 for c in clients if c.is_alive())
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/v1/tenants/bench/status", headers={"Authorization": f"Bearer {token}"})
        outbox = json.loads(conn.getresponse().read())
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
        log.close()
    acked = [t for c in clients for t in c.acked]
    db = sqlite3.connect(home / "tenants" / "bench" / ".synix" / "live" / "inbox.db")
    stored = [r[0] for r in db.execute("SELECT turn_id FROM turns")]
    db.close()
    latencies = [x for c in clients for x in c.latencies]
    stored_set, acked_set = set(stored), set(acked)
    result = {
        "clients": args.clients, "seconds": round(wall, 1), "turns_per_request": args.turns,
        "requests": len(latencies), "turns_acked": len(acked), "turns_per_s": round(len(acked) / wall, 1),
        "requests_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(pct(latencies, 50) * 1000, 1), "p99_ms": round(pct(latencies, 99) * 1000, 1),
        "max_ms": round(max(latencies) * 1000, 1) if latencies else 0,
        "mean_ms": round(statistics.mean(latencies) * 1000, 1) if latencies else 0,
        "lost": len(acked_set - stored_set), "duplicated": len(stored) - len(stored_set) + len(acked) - len(acked_set),
        "stored_not_acked": len(stored_set - acked_set), "errors": sum(len(c.errors) for c in clients),
        "stuck_clients": stuck, "sessions_closed": sum(c.closed for c in clients),
        "outbox_at_end": {k: outbox.get(k) for k in ("pending", "building", "built", "dead")},
        "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    (out / "bench_live.json").write_text(json.dumps(result, indent=2))
    print("| clients | seconds | turns/s | requests/s | p50 ms | p99 ms | max ms | lost | duplicated | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {result['clients']} | {result['seconds']} | {result['turns_per_s']} | {result['requests_per_s']} | "
          f"{result['p50_ms']} | {result['p99_ms']} | {result['max_ms']} | {result['lost']} | "
          f"{result['duplicated']} | {result['errors']} |")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
