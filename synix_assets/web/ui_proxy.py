"""A small reverse proxy (HTTP + WebSocket) from the user-facing port to a loopback upstream.

`synix ui` runs Dagster's webserver on an internal loopback port that no browser is told about
and serves it through this proxy wrapped in the guard (`guard.py`): Dagster's GraphQL endpoint
checks neither Host nor Origin itself. The UI uses WebSockets for GraphQL subscriptions, so
those are relayed too (subprotocol included).
"""
from __future__ import annotations

import asyncio
import logging

import httpx
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

log = logging.getLogger(__name__)

# Hop-by-hop headers (RFC 9110 §7.6.1) and Host, which names the proxy, not the upstream.
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                  "trailer", "transfer-encoding", "upgrade", "host"})
# Headers the WebSocket client library sets itself.
_WS_OWN = _HOP | {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
                  "sec-websocket-protocol", "content-length"}
STARTING = b"the Dagster UI is still starting (or has stopped); reload in a few seconds\n"


class ReverseProxy:
    """ASGI app relaying every HTTP request and WebSocket to http://host:port."""

    def __init__(self, host: str, port: int):
        self.http_base = f"http://{host}:{port}"
        self.ws_base = f"ws://{host}:{port}"
        self.upstream_host = f"{host}:{port}"
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _target(self, scope, base: str) -> str:
        path = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string") or b""
        return base + path.decode("latin-1") + (("?" + query.decode("latin-1")) if query else "")

    async def _http(self, scope, receive, send) -> None:
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in _HOP]
        headers.append((b"host", self.upstream_host.encode()))
        client = self._client or httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0))
        request = client.build_request(scope["method"], self._target(scope, self.http_base),
                                       headers=headers, content=bytes(body))
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError:
            await send({"type": "http.response.start", "status": 502,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body", "body": STARTING})
            return
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw
                                    if k.decode("latin-1").lower() not in _HOP]})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()

    async def _websocket(self, scope, receive, send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
                   if k.decode("latin-1").lower() not in _WS_OWN]
        try:
            upstream = await ws_connect(self._target(scope, self.ws_base),
                                        subprotocols=scope.get("subprotocols") or None,
                                        additional_headers=headers, open_timeout=10,
                                        max_size=None)
        except (OSError, InvalidHandshake, InvalidStatus, asyncio.TimeoutError):
            await send({"type": "websocket.close", "code": 1011})
            return
        await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})
        to_upstream = asyncio.create_task(self._client_to_upstream(receive, upstream))
        to_client = asyncio.create_task(self._upstream_to_client(upstream, send))
        try:
            await asyncio.wait({to_upstream, to_client}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (to_upstream, to_client):
                task.cancel()
            await upstream.close()

    @staticmethod
    async def _client_to_upstream(receive, upstream) -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            try:
                if message.get("text") is not None:
                    await upstream.send(message["text"])
                elif message.get("bytes") is not None:
                    await upstream.send(message["bytes"])
            except ConnectionClosed:
                return

    @staticmethod
    async def _upstream_to_client(upstream, send) -> None:
        try:
            async for data in upstream:
                key = "text" if isinstance(data, str) else "bytes"
                await send({"type": "websocket.send", key: data})
        except ConnectionClosed:
            pass
        await send({"type": "websocket.close", "code": upstream.close_code or 1000})
