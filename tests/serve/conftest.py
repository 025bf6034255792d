"""Fixtures for the serve tests: one built demo project (plus a hostile export) per session,
and a real `synix serve` subprocess on 127.0.0.1 stopped by PID."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from serve_helpers import free_port, stop, synix_cmd, wait_until_serving

HOSTILE_TITLE = "<script>window.pwned=1</script> Hostile kayak plan"
HOSTILE_TEXT = "Kayak <img src=x onerror=\"window.pwned=2\"> trip on the lake, kayak rental booked."


def _hostile_export(path: Path) -> Path:
    msgs = []
    for i, (sender, text) in enumerate([("human", HOSTILE_TEXT), ("assistant", "Enjoy the kayak trip.")]):
        ts = f"2025-04-02T10:0{i}:00Z"
        msgs.append({"uuid": f"hostile-m{i}", "text": text, "sender": sender, "created_at": ts,
                     "updated_at": ts, "attachments": [], "files": [],
                     "content": [{"type": "text", "text": text}]})
    path.write_text(json.dumps([{"uuid": "hostile-conv", "name": HOSTILE_TITLE,
                                 "created_at": "2025-04-02T10:00:00Z",
                                 "updated_at": "2025-04-02T10:01:00Z", "chat_messages": msgs}]),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def served_project(tmp_path_factory):
    """A built project: the bundled demo exports plus one export whose text is HTML/script."""
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project

    base = tmp_path_factory.mktemp("serve")
    hostile = _hostile_export(base / "hostile_claude.json")
    saved = {k: os.environ.get(k) for k in ("SYNIX_LLM_PROVIDER", "DAGSTER_HOME", "ANTHROPIC_API_KEY")}
    os.environ.update(SYNIX_LLM_PROVIDER="fake", DAGSTER_HOME=str(base / "dagster_home_unused"))
    os.environ.pop("ANTHROPIC_API_KEY", None)
    try:
        paths = ProjectPaths(init_project(base / "mem", exports=[*demo_exports(), hostile]))
        run_build(paths)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return paths


@pytest.fixture(scope="session")
def server(served_project, tmp_path_factory):
    """Port of a real `synix serve` for the served project on 127.0.0.1."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("serve_log") / "serve.log"
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(synix_cmd("-p", str(served_project.root), "serve", "--port", str(port)),
                                stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_until_serving(port, proc, "/v1/layers", 90, lambda: log_path.read_text(errors="replace"))
        yield port
    finally:
        stop(proc)
