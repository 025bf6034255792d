"""Fixtures for the live tests: a project made from the live template, posting helpers."""
from __future__ import annotations

import json

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
    from synix_assets.scaffold import init_project

    monkeypatch.setenv("SYNIX_LIVE_BACKOFF_S", "0")
    return ProjectPaths(init_project(tmp_path / "livemem", template="live"))


@pytest.fixture
def inbox(live_project):
    box = Inbox.from_env(live_project.root / ".synix" / "live" / "inbox.db")
    yield box
    box.close()
