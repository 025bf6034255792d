"""An error no handler expected, over real HTTP (uvicorn on 127.0.0.1 in a thread): the client
gets a JSON 500 with one line naming only the error's kind, never plain text or a traceback."""
from __future__ import annotations

import json
import threading
import time

import pytest
from serve_helpers import free_port, request

from synix_assets.web.guard import GuardPolicy
from synix_assets.web.serving import make_server


@pytest.fixture
def serve_app():
    """serve_app(asgi_app) -> port of it on 127.0.0.1 behind the guard (stopped after the test)."""
    servers = []

    def start(app) -> int:
        port = free_port()
        server = make_server(app, GuardPolicy(port=port), host="127.0.0.1", port=port)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread))
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "test server did not start"
            time.sleep(0.05)
        return port

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


def _one_line_500(port: int, method: str, path: str, **kw) -> str:
    status, headers, body = request(port, method, path, **kw)
    assert status == 500 and headers["content-type"].startswith("application/json"), (status, body)
    line = json.loads(body)["error"]
    assert "\n" not in line and "Traceback" not in line
    return line


def test_an_unexpected_error_in_the_memory_api_is_a_json_500_with_one_line(served_project, serve_app,
                                                                          monkeypatch):
    from synix_assets.app.memory import MemoryService
    from synix_assets.serve.app import create_app

    def broken(*args, **kwargs):
        raise KeyError(2237)

    monkeypatch.setattr(MemoryService, "search", broken)
    service = MemoryService(served_project)
    try:
        port = serve_app(create_app(service))
        line = _one_line_500(port, "GET", "/v1/search?q=marathon")
        assert "KeyError" in line and "2237" not in line, line
        assert request(port, "GET", "/v1/layers")[0] == 200  # the server goes on serving
    finally:
        service.close()


def test_an_unexpected_error_in_the_home_server_is_a_json_500_with_one_line(tmp_path, serve_app, monkeypatch):
    from synix_assets.app.tenants import TenantHome
    from synix_assets.serve.live_api import HomeApp
    from synix_assets.app.live import TenantServices
    from synix_assets.serve.errors import json_errors

    services = TenantServices(TenantHome(tmp_path / "home"))
    try:
        port = serve_app(json_errors(HomeApp(services)))
        monkeypatch.setattr(services, "authorise", lambda tenant, token: None)
        monkeypatch.setattr(services, "ingest", lambda *a: 1 / 0)
        line = _one_line_500(port, "POST", "/v1/tenants/alpha/ingest", body=b"{}",
                             headers={"Content-Type": "application/json", "Authorization": "Bearer x",
                                      "X-Synix-Request": "1"})
        assert "ZeroDivisionError" in line, line

        def refuse_broken(tenant, token):  # fails in HomeApp's own routing, before any FastAPI app
            raise RuntimeError("registry gone")

        monkeypatch.setattr(services, "authorise", refuse_broken)
        line = _one_line_500(port, "GET", "/v1/tenants/alpha/status")
        assert "RuntimeError" in line and "registry gone" not in line, line
    finally:
        services.close()
