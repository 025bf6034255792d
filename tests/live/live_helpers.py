"""Helpers for the live tests: posting turns, a live project, a real `synix serve --home` process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synix_resources.live.inbox import Inbox
from synix_resources.live.requests import parse_ingest


def post(inbox: Inbox, session: str, *texts: str, day: str = "2025-06-01", now: float | None = None) -> dict:
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": t, "ts": f"{day}T10:{i:02d}:00Z"}
             for i, t in enumerate(texts)]
    return inbox.ingest(parse_ingest(json.dumps({"session_id": session, "turns": turns}).encode()), now=now)


@pytest.fixture
def live_project(tmp_path, monkeypatch):
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project

    monkeypatch.setenv("SYNIX_LIVE_BACKOFF_S", "0")
    return ProjectPaths(init_project(tmp_path / "livemem", template="live"))


@pytest.fixture
def inbox(live_project):
    box = Inbox.from_env(live_project.root / ".synix" / "live" / "inbox.db")
    yield box
    box.close()


def synix(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "synix_assets.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"synix {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return proc


def create_tenant(home: Path, name: str) -> str:
    return json.loads(synix("tenant", "create", name, "--home", str(home), "--json").stdout)["token"]


def call(port: int, method: str, path: str, token: str | None = None, body=None, *,
         headers: dict | None = None, timeout: float = 30) -> tuple[int, dict | str]:
    """One request; the answer's JSON (or text)."""
    import http.client

    raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = {"Host": f"127.0.0.1:{port}", **({"Authorization": f"Bearer {token}"} if token else {}),
                **({"Content-Type": "application/json"} if raw is not None else {}), **(headers or {})}
        conn.request(method, path, body=raw, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read().decode("utf-8", "replace")
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data)
    except ValueError:
        return resp.status, data


class HomeServer:
    """`synix serve --home` in a subprocess on 127.0.0.1, stopped (or killed) by its PID."""

    def __init__(self, home: Path, log: Path, env: dict | None = None):
        from synix_assets.web.serving import free_port

        self.home, self.log_path = home, log
        self.port = free_port()
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "synix_assets.cli", "serve", "--home", str(home), "--port", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 90
        while True:
            try:
                if call(self.port, "GET", "/healthz", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"synix serve --home did not start: {self.output()[-3000:]}")
            time.sleep(0.3)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)
