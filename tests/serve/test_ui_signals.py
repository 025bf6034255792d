"""`synix ui` and signals during its start-up: the first Ctrl-C/SIGTERM stops the proxy and the
whole process group of `dagster dev`, wherever the main thread is when it lands."""
from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from synix_assets.web import process_tree, ui_server
from synix_assets.web.process_tree import alive, descendants
from synix_assets.web.serving import free_port

# A stand-in for `dagster dev`: a supervisor with a child of its own, both sleeping.
SUPERVISOR = [sys.executable, "-c",
              "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
              "'import time; time.sleep(120)']); time.sleep(120)"]


def _run(monkeypatch, *, signal_during_start: int | None = None, on_started=None):
    started = []
    real_start = process_tree.start_group

    def start_group(cmd, **kwargs):
        if signal_during_start is not None:
            os.kill(os.getpid(), signal_during_start)  # lands while Popen runs
        proc = real_start(cmd, **kwargs)
        started.append(proc)
        deadline = time.monotonic() + 30
        while len(descendants(proc.pid)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # its child is up too
        return proc
    monkeypatch.setattr(ui_server, "start_group", start_group)
    served = []
    monkeypatch.setattr("uvicorn.Server.run", lambda self, *a, **k: served.append(self))
    port = free_port()
    code = ui_server.run_guarded_ui(SUPERVISOR, dict(os.environ), os.getcwd(), host="127.0.0.1",
                                    port=port, upstream_port=free_port(), on_started=on_started)
    return code, started[0], served


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_dagster_is_being_started_stops_its_whole_group_and_never_serves(monkeypatch, signum):
    before = signal.getsignal(signum)
    code, proc, served = _run(monkeypatch, signal_during_start=signum)
    assert code == 0 and served == []
    time.sleep(0.2)
    assert not alive(proc.pid) and not any(alive(p) for p in descendants(proc.pid, proc.pid))
    assert signal.getsignal(signum) is before  # the previous handler is back


def test_a_supervisor_killed_before_its_handlers_does_not_leave_its_children_for_the_grace_period():
    proc = process_tree.start_group(SUPERVISOR)
    deadline = time.monotonic() + 30
    while not descendants(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = next(iter(descendants(proc.pid)))
    os.kill(proc.pid, signal.SIGKILL)  # gone: nobody left to stop its child
    started = time.monotonic()
    pids = process_tree.stop_group(proc, grace_s=20)
    assert child in pids and not alive(child)
    assert time.monotonic() - started < 10  # told at once, not killed after the 20 s grace
