"""Helpers for the serve/ui tests: free ports, waiting for a server, raw HTTP requests."""
from __future__ import annotations

import http.client
import signal
import subprocess
import sys
import time

from synix_assets.web.serving import free_port  # noqa: F401  (re-exported for the tests)


def request(port: int, method: str, path: str, *, headers: dict | None = None,
            body: bytes | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
    """One HTTP request to 127.0.0.1:port with exactly these headers (Host included)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": f"127.0.0.1:{port}", **(headers or {})}
        if body is not None:
            headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            conn.putheader(key, value)
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def wait_until_serving(port: int, proc, path: str, timeout_s: float, output=lambda: "") -> None:
    """Poll GET path until it answers 200; fail with the server's output if it dies or stalls."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if request(port, "GET", path, timeout=5)[0] == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"nothing served 127.0.0.1:{port}{path}: {output()[-3000:]}")
        time.sleep(0.3)


def synix_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "synix_assets.cli", *args]


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM by PID, then SIGKILL if it does not stop within 20 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
