"""`synix serve` from the command line: loopback by default, a token to go further, the token
checked on every request, clean one-line refusals, SIGTERM stops it."""
from __future__ import annotations

import json
import socket
import subprocess
import time

from serve_helpers import free_port, request, stop, synix_cmd, wait_until_serving


def test_listening_beyond_loopback_without_a_token_is_refused(served_project):
    out = subprocess.run(synix_cmd("-p", str(served_project.root), "serve", "--host", "0.0.0.0"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "without a token" in out.stderr and "--token" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_busy_port_is_a_one_line_error(served_project):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = subprocess.run(synix_cmd("-p", str(served_project.root), "serve", "--port", str(port)),
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and f"127.0.0.1:{port}" in out.stderr and "--port" in out.stderr


def test_token_is_checked_on_every_request_and_sigterm_stops_the_server(served_project, tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(synix_cmd("-p", str(served_project.root), "serve", "--port", str(port),
                                          "--token", "t0ken-123"), stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if request(port, "GET", "/v1/layers", headers={"Authorization": "Bearer t0ken-123"})[0] == 200:
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
        status, _, body = request(port, "GET", "/v1/layers")
        assert status == 401 and b"token" in body
        assert request(port, "GET", "/explore", headers={"Authorization": "Bearer wrong"})[0] == 401
        status, _, body = request(port, "GET", "/v1/layers", headers={"Cookie": "synix_token=t0ken-123"})
        assert status == 200 and json.loads(body)["layers"]
        started = time.monotonic()
        stop(proc)
        assert proc.returncode == 0 and time.monotonic() - started < 15
    finally:
        stop(proc)


def test_serve_answers_on_loopback_by_default(served_project, tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(synix_cmd("-p", str(served_project.root), "serve", "--port", str(port)),
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log.read_text())
        assert f"http://127.0.0.1:{port}" in log.read_text()
        # The kernel's table of listening sockets: bound to 127.0.0.1 only, not 0.0.0.0.
        listening = [line.split()[1] for line in open("/proc/net/tcp").read().splitlines()[1:]
                     if line.split()[3] == "0A" and int(line.split()[1].split(":")[1], 16) == port]
        assert listening == [f"0100007F:{port:04X}"]
    finally:
        stop(proc)
