"""A real `synix serve --home` refuses tenant names and session ids that break their rule
(a trailing newline, dots) with a one-line 400, before any tenant file is opened."""
from __future__ import annotations

import json

from live_helpers import HomeServer, call, create_tenant, synix


def test_home_server_refuses_a_tenant_or_session_name_with_a_newline_in_one_line(tmp_path):
    home = tmp_path / "home"
    token = create_tenant(home, "acme")
    server = HomeServer(home, tmp_path / "serve.log")
    try:
        status, body = call(server.port, "GET", "/v1/tenants/acme%0A/status", token)
        assert status == 400 and body["error"].startswith("tenant name 'acme\\n' is not allowed"), body
        status, body = call(server.port, "GET", "/v1/tenants/acme/status", token)
        assert status == 200, body
        turn = {"role": "user", "content": "hello"}
        status, body = call(server.port, "POST", "/v1/tenants/acme/ingest", token,
                            {"session_id": "chat-1\n", "turns": [turn]})
        assert status == 400 and body["error"].startswith("session_id 'chat-1\\n' is not valid"), body
        status, body = call(server.port, "GET", "/v1/tenants/acme/sessions/chat-1%0A", token)
        assert status == 400 and "session_id 'chat-1\\n' is not valid" in body["error"], body
        status, body = call(server.port, "POST", "/v1/tenants/acme/sessions/%2E%2E/close", token)
        assert status == 400 and "session_id '..' is not valid" in body["error"], body
    finally:
        server.stop()
    assert [t["tenant"] for t in json.loads(synix("tenant", "list", "--home", str(home), "--json").stdout)] == ["acme"]
