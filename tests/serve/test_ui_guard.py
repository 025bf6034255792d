"""`synix ui` for real: `dagster dev` behind the guarded proxy; SIGTERM stops every process."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from serve_helpers import free_port, request, wait_until_serving
from websockets.asyncio.client import connect

from synix_assets.app.run import run_build
from synix_assets.web.process_tree import alive, descendants

pytestmark = pytest.mark.slow


def _synix() -> str:
    return shutil.which("synix") or str(Path(sys.executable).with_name("synix"))


def _graphql_ack(port: int) -> str:
    async def talk():
        async with connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-ws"],
                           origin=f"http://127.0.0.1:{port}", open_timeout=30) as ws:
            await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
            return json.loads(await asyncio.wait_for(ws.recv(), 30))["type"]
    return asyncio.run(talk())


def test_synix_ui_refuses_rebinding_and_cross_origin_mutations_and_sigterm_stops_every_process(
        demo_project, tmp_path):
    run_build(demo_project)
    port = free_port()
    log = open(tmp_path / "ui.log", "w+b")
    proc = subprocess.Popen([_synix(), "-p", str(demo_project.root), "ui", "--port", str(port),
                             "--no-open"], stdout=log, stderr=subprocess.STDOUT)
    output = lambda: (tmp_path / "ui.log").read_text(errors="replace")  # noqa: E731
    try:
        wait_until_serving(port, proc, "/server_info", 180, output)
        same = {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json"}
        status, _, body = request(port, "POST", "/graphql", headers=same,
                                  body=json.dumps({"query": "{ assetNodes { assetKey { path } } }"}).encode())
        assert status == 200
        keys = {"/".join(n["assetKey"]["path"]) for n in json.loads(body)["data"]["assetNodes"]}
        assert {"episodes", "core"} <= keys
        # A page on another site firing a mutation through a GET (an <img>, a link, fetch no-cors).
        mutation = "/graphql?query=mutation%20%7B%20wipeAssets(assetPartitionRanges%3A%20%5B%5D)%20%7B%20__typename%20%7D%20%7D"
        for headers in ({}, {"Origin": "http://evil.example"}, {"Referer": "http://evil.example/"}):
            assert request(port, "GET", mutation, headers=headers)[0] == 403, headers
        # DNS rebinding: the attacker's name pointed at 127.0.0.1.
        status, _, body = request(port, "GET", "/server_info", headers={"Host": f"evil.example:{port}"})
        assert status == 403 and b"not this server" in body
        assert request(port, "POST", "/graphql", headers={"Content-Type": "application/json"},
                       body=b'{"query": "{ version }"}')[0] == 403
        assert _graphql_ack(port) == "connection_ack"  # subscriptions relayed over WebSocket
        tree = descendants(proc.pid)
        assert len(tree) >= 3, "expected dagster dev with its webserver and daemon"
    finally:
        tree = descendants(proc.pid) | {proc.pid}
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            for pid in tree:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            raise
        deadline = time.monotonic() + 5
        while any(alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = [p for p in tree if alive(p)]
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
        log.close()
    assert code == 0, output()
    assert survivors == [], f"left running after SIGTERM: {survivors}"
    assert f"http://127.0.0.1:{port}" in output()


def _project_processes(root: Path) -> list[int]:
    """Live processes started for this project (`synix ui` gives dagster dev and everything it
    starts SYNIX_PROJECT=root)."""
    marker = f"SYNIX_PROJECT={root}".encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile, or not ours
                continue
    return found


@pytest.mark.parametrize("delay_s", [0.3, 1.0, 2.5, 5.0])
def test_the_first_sigterm_at_any_moment_of_start_up_stops_synix_ui_and_every_process(demo_project, delay_s):
    root = demo_project.root
    proc = subprocess.Popen([_synix(), "-p", str(root), "ui", "--port", str(free_port()), "--no-open"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(delay_s)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=40)
        assert proc.returncode in (0, -signal.SIGTERM), out  # -15: before anything was started
        # Dagster's own processes (webserver, daemon, the code server loading definitions.py)
        # stopped in the middle of their start-up may print click's "Aborted!" and a traceback
        # that starts in Dagster's entry point; `synix ui`'s own process must print none.
        for block in out.split("Traceback (most recent call last):")[1:]:
            entry = [line for line in block.splitlines() if line.strip().startswith("File ")][:3]
            assert any("/dagster" in line for line in entry), out
        time.sleep(0.5)
        assert _project_processes(root) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in _project_processes(root):  # only processes carrying this test's project
            os.kill(pid, signal.SIGKILL)
