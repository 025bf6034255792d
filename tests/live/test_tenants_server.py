"""Tenants over a real `synix serve --home` process: ingest → close → built memory → brief;
isolation between tenants across every endpoint; bad input refused with one line and nothing
written; tenant delete forgets everything."""
from __future__ import annotations

import json
import sqlite3

import pytest
from live_helpers import HomeServer, call, create_tenant, synix, wait_for

ENV = {"SYNIX_LLM_PROVIDER": "fake", "SYNIX_LIVE_BACKOFF_S": "1"}


def _turns(*texts):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def _turn_count(home, tenant) -> int:
    db = home / "tenants" / tenant / ".synix" / "live" / "inbox.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A home with tenants `alpha` and `bravo`; bravo has a built memory (a closed session)."""
    home = tmp_path_factory.mktemp("home") / "h"
    tokens = {name: create_tenant(home, name) for name in ("alpha", "bravo")}
    server = HomeServer(home, home.parent / "serve.log", env=ENV)
    try:
        status, answer = call(server.port, "POST", "/v1/tenants/bravo/ingest", tokens["bravo"],
                              {"session_id": "bravo-secret-session",
                               "turns": _turns("Bravo's launch code is PELICAN-42", "Noted, kept private")})
        assert status == 200, answer
        assert call(server.port, "POST", "/v1/tenants/bravo/sessions/bravo-secret-session/close",
                    tokens["bravo"])[0] == 200
        wait_for(lambda: call(server.port, "GET", "/v1/tenants/bravo/status", tokens["bravo"])[1]["built"] == 1,
                 120, "bravo's session to be built")
        yield home, server, tokens
    finally:
        server.stop()


def test_ingest_then_close_builds_the_memory_and_the_brief_shows_built_and_recent_turns(served):
    home, server, tokens = served
    port, tok = server.port, tokens["alpha"]
    status, first = call(port, "POST", "/v1/tenants/alpha/ingest", tok,
                         {"turns": _turns("I am training for the Lisbon marathon in October",
                                          "Great, build up to 30 km long runs")})
    assert status == 200 and first["created"] and first["version"] == 1
    sid = first["session_id"]
    assert first["turn_ids"] == [f"{sid}-1", f"{sid}-2"]
    status, brief = call(port, "GET", "/v1/tenants/alpha/brief?query=marathon", tok)
    assert status == 200 and brief["live_sessions"][0]["session_id"] == sid
    assert "Lisbon marathon" in brief["text"]
    assert call(port, "POST", f"/v1/tenants/alpha/sessions/{sid}/close", tok)[1]["closed_now"]
    wait_for(lambda: call(port, "GET", "/v1/tenants/alpha/status", tok)[1]["built"] == 1, 120, "the build")
    status, hits = call(port, "GET", "/v1/tenants/alpha/search?q=marathon", tok)
    assert status == 200 and hits["hits"]
    source = hits["hits"][0]["sources"][0]
    assert source["conversation_id"] == sid
    status, record = call(port, "GET", f"/v1/tenants/alpha/records/{source['artifact_id']}", tok)
    assert record["metadata"]["meta.custom.turn_ids"] == first["turn_ids"]
    # a minute-old turn of a new session is in the brief next to the built memory
    call(port, "POST", "/v1/tenants/alpha/ingest", tok, {"session_id": "later", "turns": _turns("New shoes arrived")})
    brief = call(port, "GET", "/v1/tenants/alpha/brief?query=marathon", tok)[1]
    kinds = {s["kind"] for s in brief["sections"]}
    assert {"core", "hit"} <= kinds and "New shoes arrived" in brief["text"]
    assert [s["session_id"] for s in brief["live_sessions"]] == ["later"]


def test_the_same_idempotency_key_over_http_writes_once(served):
    home, server, tokens = served
    before = _turn_count(home, "alpha")
    body = {"session_id": "idem", "turns": _turns("exactly once please")}
    a = call(server.port, "POST", "/v1/tenants/alpha/ingest", tokens["alpha"], body, headers={"Idempotency-Key": "k-77"})
    b = call(server.port, "POST", "/v1/tenants/alpha/ingest", tokens["alpha"], body, headers={"Idempotency-Key": "k-77"})
    assert a[0] == b[0] == 200 and b[1]["replayed"] and a[1]["turn_ids"] == b[1]["turn_ids"]
    assert _turn_count(home, "alpha") == before + 1
    other = call(server.port, "POST", "/v1/tenants/alpha/ingest", tokens["alpha"],
                 {"session_id": "idem", "turns": _turns("a different body")}, headers={"Idempotency-Key": "k-77"})
    assert other[0] == 409 and "k-77" in other[1]["error"]


def test_a_tenant_token_reads_and_writes_nothing_of_another_tenant(served):
    home, server, tokens = served
    port, alpha, bravo = server.port, tokens["alpha"], tokens["bravo"]
    # ids guessed (here: known) from bravo's memory
    hits = call(port, "GET", "/v1/tenants/bravo/search?q=PELICAN", bravo)[1]["hits"]
    bravo_ids = {h["artifact_id"] for h in hits} | {s["artifact_id"] for h in hits for s in h["sources"]}
    assert bravo_ids
    bravo_turns = _turn_count(home, "bravo")
    gets = ["brief", "brief?query=PELICAN", "status", "search?q=PELICAN", "search?q=PELICAN&evidence=true",
            "layers", "layers/episodes", "timeline", "context", "map", "pipeline", "whatever",
            "sessions/bravo-secret-session"]
    gets += [f"records/{i}{suffix}" for i in bravo_ids for suffix in ("", "/sources", "/leaves", "/lineage")]
    posts = [("ingest", {"session_id": "bravo-secret-session", "turns": _turns("injected")}),
             ("sessions/bravo-secret-session/close", None)]
    for path in gets:  # alpha's token on bravo's paths: refused, naming nothing of bravo
        status, answer = call(port, "GET", f"/v1/tenants/bravo/{path}", alpha)
        assert status == 403, (path, answer)
        assert "PELICAN" not in json.dumps(answer)
    for path, body in posts:
        assert call(port, "POST", f"/v1/tenants/bravo/{path}", alpha, body)[0] == 403
    # bravo's ids on alpha's own paths: nothing found, nothing of bravo shown
    for path in [f"records/{i}{suffix}" for i in bravo_ids for suffix in ("", "/sources", "/leaves", "/lineage")] \
            + ["sessions/bravo-secret-session", "search?q=PELICAN", "brief?query=PELICAN"]:
        status, answer = call(port, "GET", f"/v1/tenants/alpha/{path}", alpha)
        assert "launch code" not in json.dumps(answer) and "kept private" not in json.dumps(answer), path
        if path.startswith(("records", "sessions")):
            assert status == 404, (path, answer)
    status, _ = call(port, "POST", "/v1/tenants/alpha/sessions/bravo-secret-session/close", alpha)
    assert status == 404
    assert _turn_count(home, "bravo") == bravo_turns
    # an unknown tenant looks exactly like another tenant's: 403, no hint whether it exists
    assert call(port, "GET", "/v1/tenants/nobody/brief", alpha) == \
        (403, {"error": "refused: this token is not valid for tenant 'nobody'"})


@pytest.mark.parametrize("name, body, headers, token_of, status, words", [
    ("malformed JSON", b'{"turns": [', {}, "alpha", 400, "not JSON"),
    ("missing turns", b'{"session_id": "x"}', {}, "alpha", 400, "no turns"),
    ("missing content", b'{"turns": [{"role": "user"}]}', {}, "alpha", 400, "content is missing"),
    ("unknown role", b'{"turns": [{"role": "robot", "content": "x"}]}', {}, "alpha", 400, "role"),
    ("10 MB turn", json.dumps({"turns": [{"role": "user", "content": "x" * 10_000_000}]}).encode(),
     {}, "alpha", 413, "over the"),
    ("invalid UTF-8", b'{"turns": [{"role": "user", "content": "caf\xe9 \xff"}]}', {}, "alpha", 400, "not UTF-8"),
    ("lone surrogate", b'{"turns": [{"role": "user", "content": "\\ud800"}]}', {}, "alpha", 400, "not valid Unicode"),
    ("no token", b'{"turns": [{"role": "user", "content": "x"}]}', {}, None, 401, "token"),
    ("wrong token", b'{"turns": [{"role": "user", "content": "x"}]}', {}, "forged", 401, "token"),
])
def test_bad_input_is_a_4xx_with_one_line_and_nothing_is_written(served, name, body, headers, token_of,
                                                                   status, words):
    home, server, tokens = served
    before = (_turn_count(home, "alpha"), _turn_count(home, "bravo"))
    token = tokens.get(token_of, "synix_forged-token") if token_of else None
    got, answer = call(server.port, "POST", "/v1/tenants/alpha/ingest", token, body, headers=headers)
    assert got == status, (name, answer)
    assert isinstance(answer, dict) and words in answer["error"] and "\n" not in answer["error"]
    assert (_turn_count(home, "alpha"), _turn_count(home, "bravo")) == before


def _turn_with(session_id: str, fields: str) -> bytes:
    """A one-turn ingest body with raw JSON `fields` added to the turn (NaN is not JSON)."""
    return (f'{{"session_id": "{session_id}", "turns": [{{"role": "user", "content": "hello", '
            f'{fields}}}]}}').encode()


@pytest.mark.parametrize("name, fields, field", [
    ("epoch 1e20", '"ts": 1e20', "turns[0].ts"),
    ("epoch 1e300", '"ts": 1e300', "turns[0].ts"),
    ("year 1 east of UTC", '"ts": "0001-01-01T00:00:00+14:00"', "turns[0].ts"),
    ("year 9999 west of UTC", '"ts": "9999-12-31T23:59:59-14:00"', "turns[0].ts"),
    ("5,000-digit number", '"metadata": {"n": ' + "7" * 5000 + "}", "turns[0].metadata.n"),
    ("NaN", '"metadata": {"a": NaN}', "turns[0].metadata.a"),
    ("Infinity in a list", '"metadata": {"a": [1, -Infinity]}', "turns[0].metadata.a[1]"),
    ("float overflow", '"metadata": {"deep": {"x": 1e400}}', "turns[0].metadata.deep.x"),
])
def test_unstorable_times_and_numbers_are_a_400_naming_the_field_and_nothing_is_stored(
        served, name, fields, field):
    home, server, tokens = served
    port, tok = server.port, tokens["alpha"]
    session = "odd-" + "".join(c if c.isalnum() else "-" for c in name)
    before = _turn_count(home, "alpha")
    status, answer = call(port, "POST", "/v1/tenants/alpha/ingest", tok, _turn_with(session, fields))
    assert status == 400, (name, answer)
    assert answer["error"].startswith(field + " ") and "\n" not in answer["error"], answer
    assert _turn_count(home, "alpha") == before
    assert call(port, "GET", f"/v1/tenants/alpha/sessions/{session}", tok)[0] == 404
    # The session is not poisoned: the same session with a plain turn is stored and read back.
    status, _ = call(port, "POST", "/v1/tenants/alpha/ingest", tok, _turn_with(session, '"metadata": {"a": 1}'))
    assert status == 200
    status, read = call(port, "GET", f"/v1/tenants/alpha/sessions/{session}", tok)
    assert status == 200 and [t["metadata"] for t in read["turns"]] == [{"a": 1}]


def test_unknown_tenant_and_unknown_paths_are_refused_with_one_line(served):
    home, server, tokens = served
    status, answer = call(server.port, "POST", "/v1/tenants/ghost/ingest", "synix_forged",
                          {"turns": _turns("x")})
    assert status == 401 and "token" in answer["error"]
    assert not (home / "tenants" / "ghost").exists()
    assert call(server.port, "GET", "/v1/search?q=x", tokens["alpha"])[0] == 404
    assert call(server.port, "POST", "/v1/tenants/alpha/sessions/no-such/close", tokens["alpha"])[0] == 404


def test_tenant_delete_forgets_everything_and_its_token_stops_working(tmp_path):
    home = tmp_path / "h"
    token = create_tenant(home, "gone")
    keep = create_tenant(home, "kept")
    assert token.encode() not in (home / "tenants.db").read_bytes()  # only the hash is stored
    server = HomeServer(home, tmp_path / "serve.log", env={**ENV, "SYNIX_LIVE_IDLE_MINUTES": "60"})
    try:
        assert call(server.port, "POST", "/v1/tenants/gone/ingest", token,
                    {"session_id": "bye", "turns": _turns("ZEBRA-SECRET never again")})[0] == 200
        result = json.loads(synix("tenant", "delete", "gone", "--home", str(home), "--json").stdout)
        assert result["deleted"] and result["leftovers"] == []
        assert not (home / "tenants" / "gone").exists()
        assert call(server.port, "GET", "/v1/tenants/gone/brief", token)[0] == 401
        assert call(server.port, "GET", "/v1/tenants/kept/brief", keep)[0] == 200
    finally:
        server.stop()
    listed = json.loads(synix("tenant", "list", "--home", str(home), "--json").stdout)
    assert [t["tenant"] for t in listed] == ["kept"]
    for path in home.rglob("*"):
        if path.is_file():
            assert b"ZEBRA-SECRET" not in path.read_bytes(), path
    again = synix("tenant", "delete", "gone", "--home", str(home), "--json", check=False)
    assert again.returncode != 0 and "no tenant 'gone'" in again.stderr


def test_a_tenant_brief_gives_tier1_of_the_session_the_request_names(tmp_path):
    home = tmp_path / "h"
    token = create_tenant(home, "win")
    pipeline = home / "tenants" / "win" / "pipeline.py"
    text = pipeline.read_text()
    assert 'pipeline.source("live", kind="live")' in text
    pipeline.write_text(text.replace('pipeline.source("live", kind="live")',
                                     'pipeline.source("live", kind="live", window=4)'))
    server = HomeServer(home, tmp_path / "serve.log", env={**ENV, "SYNIX_LIVE_IDLE_MINUTES": "60"})
    try:
        for sid, said in (("first", "I live in Porto"), ("second", "I live in Oslo")):
            assert call(server.port, "POST", "/v1/tenants/win/ingest", token,
                        {"session_id": sid, "turns": _turns(said, "Noted")})[0] == 200
        latest = call(server.port, "GET", "/v1/tenants/win/brief", token)[1]
        named = call(server.port, "GET", "/v1/tenants/win/brief?session=first", token)[1]
        bad = call(server.port, "GET", "/v1/tenants/win/brief?session=a%0Ab", token)
    finally:
        server.stop()
    assert latest["tier1"]["session_id"] == "second"
    assert named["tier1"]["session_id"] == "first"
    assert [t["content"] for t in named["tier1"]["working_memory"]] == ["I live in Porto", "Noted"]
    assert bad[0] == 400 and "session" in bad[1]["error"]


@pytest.mark.parametrize("odd", ["9999-12-31T23:59:59-14:00", "7" * 5000])
def test_a_tenant_brief_as_of_past_9999_in_utc_or_not_a_date_is_a_400_naming_as_of(served, odd):
    from urllib.parse import quote

    home, server, tokens = served
    status, answer = call(server.port, "GET", f"/v1/tenants/bravo/brief?as_of={quote(odd)}", tokens["bravo"])
    assert status == 400, answer
    assert answer["error"].startswith(f"as_of {odd[:40]!r} is ") and "0001 and 9999 in UTC" in answer["error"]
    assert call(server.port, "GET", "/v1/tenants/bravo/brief?as_of=2025-03-01", tokens["bravo"])[0] == 200
