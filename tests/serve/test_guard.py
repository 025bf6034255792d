"""The request guard over real HTTP: a tiny app behind GuardMiddleware served by uvicorn."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from serve_helpers import free_port, request
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from synix_assets.web.guard import GuardPolicy, check_request
from synix_assets.web.serving import make_server


async def _app(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
    elif scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"served " + scope["method"].encode()})
    else:
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": "hello"})
        await send({"type": "websocket.close"})


@pytest.fixture
def guarded():
    """start(token=None) -> port of a guarded app on 127.0.0.1 (stopped after the test)."""
    servers = []

    def start(**policy) -> int:
        port = free_port()
        server = make_server(_app, GuardPolicy(port=port, **policy), host="127.0.0.1", port=port)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread))
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "guarded test server did not start"
            time.sleep(0.05)
        return port

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


def test_same_origin_and_plain_reads_are_served(guarded):
    port = guarded()
    assert request(port, "GET", "/")[0] == 200
    for name in ("localhost", "[::1]"):
        assert request(port, "GET", "/", headers={"Host": f"{name}:{port}"})[0] == 200
    status, _, body = request(port, "POST", "/graphql", body=b"{}",
                              headers={"Origin": f"http://127.0.0.1:{port}"})
    assert (status, body) == (200, b"served POST")
    assert request(port, "POST", "/x", body=b"", headers={"X-Synix-Request": "1"})[0] == 200
    assert request(port, "GET", "/", headers={"Referer": f"http://127.0.0.1:{port}/page"})[0] == 200


def test_dns_rebinding_host_is_refused(guarded):
    port = guarded()
    for host in (f"evil.example:{port}", "127.0.0.1:1", f"127.0.0.1.evil.example:{port}", ""):
        status, _, body = request(port, "GET", "/", headers={"Host": host})
        assert status == 403 and b"not this server" in body, host


def test_cross_origin_requests_are_refused(guarded):
    port = guarded()
    mutation = "/graphql?query=mutation%20%7B%20wipeAssets%20%7D"
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Origin": f"http://localhost:{port}"},  # another origin, same machine
                    {"Referer": "http://evil.example/page"}):
        status, _, body = request(port, "GET", mutation, headers=headers)
        assert status == 403 and b"cross-origin" in body, headers
    status, _, body = request(port, "GET", mutation)  # an <img src> or a link: no Origin at all
    assert status == 403 and b"mutation over GET" in body
    status, _, body = request(port, "POST", "/graphql", body=b"{}")
    assert status == 403 and b"POST without a same-origin Origin" in body
    assert request(port, "GET", "/graphql?query=%7B%20version%20%7D")[0] == 200


def test_cross_origin_websocket_is_refused_same_origin_accepted(guarded):
    port = guarded()

    async def talk(origin):
        async with connect(f"ws://127.0.0.1:{port}/ws", origin=origin) as ws:
            return await ws.recv()

    assert asyncio.run(talk(f"http://127.0.0.1:{port}")) == "hello"
    with pytest.raises(InvalidStatus) as err:
        asyncio.run(talk("http://evil.example"))
    assert err.value.response.status_code == 403


def test_token_is_required_on_every_request_and_can_become_a_cookie(guarded):
    port = guarded(bind_host="127.0.0.1", token="s3cret-token")
    status, _, body = request(port, "GET", "/")
    assert status == 401 and b"needs its token" in body
    assert request(port, "GET", "/", headers={"Authorization": "Bearer wrong"})[0] == 401
    assert request(port, "GET", "/", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
    status, headers, _ = request(port, "GET", "/?token=s3cret-token")
    assert status == 200 and "SameSite=Strict" in headers["set-cookie"]
    assert request(port, "GET", "/", headers={"Cookie": "synix_token=s3cret-token"})[0] == 200
    # The token does not excuse a cross-origin request.
    assert request(port, "GET", "/", headers={"Authorization": "Bearer s3cret-token",
                                              "Origin": "http://evil.example"})[0] == 403


def test_listening_beyond_loopback_needs_a_token_and_checks_the_bound_name():
    with pytest.raises(ValueError, match="token"):
        GuardPolicy(port=8080, bind_host="192.168.1.5")
    policy = GuardPolicy(port=8080, bind_host="192.168.1.5", token="t")
    scope = {"type": "http", "method": "GET", "query_string": b"",
             "headers": [(b"host", b"192.168.1.5:8080"), (b"authorization", b"Bearer t")]}
    assert check_request(policy, scope) is None
    scope["headers"][0] = (b"host", b"evil.example:8080")
    assert check_request(policy, scope)[0] == 403
    proxied = GuardPolicy(port=3000, allowed_hosts=("memory.example.com",))
    scope = {"type": "http", "method": "POST", "query_string": b"",
             "headers": [(b"host", b"memory.example.com"), (b"origin", b"https://memory.example.com")]}
    assert check_request(proxied, scope) is None
