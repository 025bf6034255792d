"""Reliability of live memory with a real server process: kill -9 under load then restart (every
acknowledged turn present once, clients' retries deduplicated, the outbox resumes, no session
built twice) and the model down during closes (ingest and brief keep working, sessions wait with
backoff and build when the model returns)."""
from __future__ import annotations

import http.client
import sqlite3
import threading
import time

from live_helpers import HomeServer, call, create_tenant, wait_for

ENV = {"SYNIX_LLM_PROVIDER": "fake", "SYNIX_LIVE_BACKOFF_S": "1", "SYNIX_LIVE_IDLE_MINUTES": "60"}


def _db(home, tenant, name):
    folder = home / "tenants" / tenant / ".synix"
    return sqlite3.connect(folder / ("live/inbox.db" if name == "inbox" else "synix.db"))


class Client(threading.Thread):
    """Posts sessions of 3 requests (2 turns each, idempotency keys) then closes each; keeps
    what was acknowledged and what is still owed (to retry after a crash, as a client would)."""

    def __init__(self, port: int, token: str, n: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.port, self.token, self.n, self.stop = port, token, n, stop
        self.acked: list[str] = []
        self.owed: list[tuple[str, str, dict | None]] = []  # (key or "", path, body)
        self.sessions: set[str] = set()

    def plan(self, k: int) -> list[tuple[str, str, dict | None]]:
        sid = f"c{self.n}-s{k}"
        steps = [(f"{sid}-r{r}", "/v1/tenants/load/ingest",
                  {"session_id": sid, "turns": [{"role": "user", "content": f"{sid} request {r} question"},
                                                {"role": "assistant", "content": f"{sid} request {r} answer"}]})
                 for r in range(3)]
        return steps + [("", f"/v1/tenants/load/sessions/{sid}/close", None)]

    def send(self, port: int, key: str, path: str, body) -> bool:
        try:
            status, answer = call(port, "POST", path, self.token, body,
                                  headers={"Idempotency-Key": key} if key else None, timeout=20)
        except (OSError, http.client.HTTPException):  # killed mid-answer (IncompleteRead): owed
            return False
        assert status == 200, answer
        if key:
            self.acked.extend(answer["turn_ids"])
        return True

    def run(self) -> None:
        k = 0
        while not self.stop.is_set():
            steps = self.plan(k)
            self.sessions.add(f"c{self.n}-s{k}")
            for i, (key, path, body) in enumerate(steps):
                if not self.send(self.port, key, path, body):
                    self.owed = steps[i:]
                    return
            k += 1

    def finish(self, port: int) -> None:
        for key, path, body in self.owed:
            assert self.send(port, key, path, body)


def test_kill_9_under_load_loses_no_acknowledged_turn_and_builds_no_session_twice(tmp_path):
    home = tmp_path / "h"
    token = create_tenant(home, "load")
    server = HomeServer(home, tmp_path / "serve.log", env=ENV)
    stop = threading.Event()
    clients = [Client(server.port, token, n, stop) for n in range(12)]
    for c in clients:
        c.start()
    # kill the server while it builds a batch under load
    wait_for(lambda: call(server.port, "GET", "/v1/tenants/load/status", token)[1]["building"], 90,
             "a build under load", interval_s=0.1)
    time.sleep(0.5)
    server.kill()
    for c in clients:
        c.join(timeout=60)
    assert all(not c.is_alive() for c in clients)
    acked = [t for c in clients for t in c.acked]
    assert len(acked) > 50
    inbox = _db(home, "load", "inbox")
    stored = [r[0] for r in inbox.execute("SELECT turn_id FROM turns")]
    assert set(acked) <= set(stored)  # everything acknowledged survived the kill
    inbox.close()
    restarted = HomeServer(home, tmp_path / "serve2.log", env=ENV)
    try:
        for c in clients:  # clients retry what they were owed, with the same keys
            c.finish(restarted.port)
        sessions = {s for c in clients for s in c.sessions}
        wait_for(lambda: call(restarted.port, "GET", "/v1/tenants/load/status", token)[1]["built"] == len(sessions),
                 240, "every closed session to be built", interval_s=1)
        status = call(restarted.port, "GET", "/v1/tenants/load/status", token)[1]
        assert (status["pending"], status["building"], status["dead"]) == (0, 0, 0)
    finally:
        restarted.stop()
    inbox = _db(home, "load", "inbox")
    contents = [r[0] for r in inbox.execute("SELECT content FROM turns")]
    assert len(contents) == len(set(contents)) == 6 * len(sessions)  # each posted turn exactly once
    assert [r[0] for r in inbox.execute("SELECT DISTINCT version FROM turns")] == [1]
    # the batch the kill interrupted was handed to the build again (a second attempt)
    assert inbox.execute("SELECT MAX(attempts) FROM outbox").fetchone()[0] >= 2
    inbox.close()
    store = _db(home, "load", "store")
    for layer in ("transcripts", "episodes"):
        per_session = dict(store.execute("SELECT group_key, COUNT(*) FROM artifacts WHERE layer = ? "
                                         "GROUP BY group_key", (layer,)).fetchall())
        assert set(per_session) == sessions and set(per_session.values()) == {1}, layer
    store.close()


def test_model_down_ingest_and_brief_work_sessions_back_off_and_build_when_it_returns(tmp_path):
    home = tmp_path / "h"
    token = create_tenant(home, "t")
    down = HomeServer(home, tmp_path / "down.log", env={**ENV, "SYNIX_FAKE_FAILURE_RATE": "1.0",
                                                         "SYNIX_LIVE_MAX_ATTEMPTS": "20"})
    try:
        port = down.port
        assert call(port, "POST", "/v1/tenants/t/ingest", token,
                    {"session_id": "during-outage", "turns": [{"role": "user", "content": "The model is down but I booked Porto"}]})[0] == 200
        assert call(port, "POST", "/v1/tenants/t/sessions/during-outage/close", token)[0] == 200
        status = wait_for(lambda: (lambda s: s if s["max_attempts_so_far"] >= 2 else None)(
            call(port, "GET", "/v1/tenants/t/status", token)[1]), 120, "two failed attempts")
        assert status["pending"] == 1 and status["built"] == 0 and "episodes/during-outage" in status["last_error"]
        # ingest and brief keep working meanwhile
        assert call(port, "POST", "/v1/tenants/t/ingest", token,
                    {"session_id": "next", "turns": [{"role": "user", "content": "Still here"}]})[0] == 200
        code, brief = call(port, "GET", "/v1/tenants/t/brief?query=Porto", token)
        assert code == 200 and "booked Porto" in brief["text"] and "Still here" in brief["text"]
        assert {s["session_id"]: s["state"] for s in brief["live_sessions"]} == {"during-outage": "closed",
                                                                                 "next": "open"}
    finally:
        down.stop()
    back = HomeServer(home, tmp_path / "back.log", env=ENV)  # the model is back
    try:
        wait_for(lambda: call(back.port, "GET", "/v1/tenants/t/status", token)[1]["built"] == 1, 120,
                 "the session to build once the model is back")
        code, brief = call(back.port, "GET", "/v1/tenants/t/brief?query=Porto", token)
        assert code == 200 and {s["kind"] for s in brief["sections"]} >= {"core", "hit"}
        assert [s["session_id"] for s in brief["live_sessions"]] == ["next"]
    finally:
        back.stop()
