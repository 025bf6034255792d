"""An ASGI guard in front of every Synix web server (`synix ui`, `synix serve`).

Browsers let any web page the user visits send requests to 127.0.0.1, and DNS rebinding lets a
page read the answers (its own domain re-pointed at 127.0.0.1). So, before a request reaches
the application:

- `Host` must name this server: 127.0.0.1, localhost or [::1] with the bound port (a rebinding
  attack carries the attacker's domain), plus the bound address and `allowed_hosts` when the
  server listens beyond loopback;
- a cross-origin `Origin` (or, without Origin, `Referer`) is refused, WebSockets included;
- a state-changing request — any POST/PUT/PATCH/DELETE, or a GraphQL mutation sent over GET —
  needs proof it is not a forged form or link: a same-origin `Origin` or the custom header
  `X-Synix-Request` (a cross-site page cannot set custom headers without a CORS preflight,
  which nothing here answers); for the MCP endpoint, whose clients POST JSON without Origin,
  `Content-Type: application/json` counts too (`json_is_proof`: equally impossible cross-site
  without a preflight);
- with a token configured (required beyond loopback), every request carries it: an
  `Authorization: Bearer` header, the `synix_token` cookie, or `?token=` once (which sets the
  cookie, SameSite=Strict, so links work in a browser). Compared in constant time.

Refusals are a 403 (401 for the token) with a one-line plain-text reason.
"""
from __future__ import annotations

import hmac
import ipaddress
import re
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
CUSTOM_HEADER = "x-synix-request"
TOKEN_COOKIE = "synix_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The first operation keyword of a GraphQL document (after comments/whitespace/braces).
_MUTATION = re.compile(r"(^|[\s{};,])mutation\b", re.IGNORECASE)


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and "localhost" (the only binds that need no token)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_form(host: str) -> str:
    """How an address appears in a Host header: IPv6 in brackets."""
    host = host.strip("[]")
    return f"[{host}]" if ":" in host else host


@dataclass
class GuardPolicy:
    """What the guard lets through for a server bound at (`bind_host`, `port`)."""

    port: int
    bind_host: str = "127.0.0.1"
    token: str | None = None
    allowed_hosts: tuple[str, ...] = ()
    # MCP clients POST JSON without Origin. A browser cannot send a cross-origin
    # `Content-Type: application/json` request without a CORS preflight (never answered
    # here), so for such endpoints that content type is proof enough.
    json_is_proof: bool = False
    # Servers whose every request must carry a bearer token (`synix serve --home`): a browser
    # cannot add an Authorization header cross-site without a preflight either.
    bearer_is_proof: bool = False
    hosts: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        names = set(LOOPBACK_NAMES)
        wildcard = self.bind_host in ("0.0.0.0", "::", "")
        if not wildcard:
            names.add(_host_form(self.bind_host).lower())
        # Listening on every interface, the Host is whatever name reaches the machine; the
        # token (required there) is what keeps a rebinding page out.
        self.any_host = wildcard and not self.allowed_hosts
        # `allowed_hosts` are names a reverse proxy in front forwards as they are
        # ("memory.example.com", or with its port), so they are taken literally.
        self.hosts = frozenset({f"{n}:{self.port}" for n in names}
                               | (names if self.port == 80 else set())
                               | {h.lower() for h in self.allowed_hosts})
        if not is_loopback(self.bind_host) and not self.token:
            raise ValueError("a token is required to listen beyond loopback")

    def host_ok(self, host: str | None) -> bool:
        if not host:
            return False
        host = host.lower()
        if self.any_host:
            return True
        return host in self.hosts

    def token_ok(self, presented: str | None) -> bool:
        if self.token is None:
            return True
        if presented is None:
            return False
        return hmac.compare_digest(presented.encode("utf-8", "surrogatepass"),
                                   self.token.encode("utf-8", "surrogatepass"))


def _headers(scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        out[name] = f"{out[name]}, {text}" if name in out and name != "cookie" else text
    return out


def _origin_host(value: str) -> str | None:
    """host[:port] of an Origin/Referer URL, or None for "null" and anything unparsable."""
    if not value or value == "null":
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
        return None
    return parts.netloc.rsplit("@", 1)[-1].lower()


def check_request(policy: GuardPolicy, scope) -> tuple[int, str] | None:
    """None if the request may pass, else (status, one-line reason). Pure, for tests too."""
    headers = _headers(scope)
    host = headers.get("host")
    if not policy.host_ok(host):
        return 403, (f"refused: Host {host!r} is not this server (only loopback names with port "
                     f"{policy.port} are served; a DNS-rebinding page would arrive like this)")
    origin = headers.get("origin")
    referer = headers.get("referer")
    same_origin = False
    if origin is not None:
        if _origin_host(origin) != host.lower():
            return 403, f"refused: cross-origin request from {origin!r}"
        same_origin = True
    elif referer is not None:
        if _origin_host(referer) != host.lower():
            return 403, "refused: cross-origin request (Referer names another site)"
    json_body = policy.json_is_proof and headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
    bearer = policy.bearer_is_proof and headers.get("authorization", "").lower().startswith("bearer ")
    if scope["type"] == "http" and not same_origin and CUSTOM_HEADER not in headers and not json_body \
            and not bearer:
        method = scope.get("method", "GET").upper()
        if method not in SAFE_METHODS:
            return 403, (f"refused: {method} without a same-origin Origin header or the "
                         f"X-Synix-Request header")
        if _graphql_mutation(scope):
            return 403, ("refused: a GraphQL mutation over GET needs a same-origin Origin header "
                         "or the X-Synix-Request header")
    if policy.token is not None and not policy.token_ok(_presented_token(scope, headers)):
        return 401, ("refused: this server needs its token (Authorization: Bearer TOKEN, or "
                     "open the URL once with ?token=TOKEN)")
    return None


def _graphql_mutation(scope) -> bool:
    query = scope.get("query_string", b"").decode("latin-1")
    if not query:
        return False
    for values in parse_qs(query, keep_blank_values=True).values():
        for value in values:
            if _MUTATION.search(value):
                return True
    return False


def _query_token(scope) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


def _presented_token(scope, headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    if "cookie" in headers:
        cookie = SimpleCookie()
        try:
            cookie.load(headers["cookie"])
        except CookieError:  # a malformed Cookie header is just "no token"
            cookie = SimpleCookie()
        if TOKEN_COOKIE in cookie:
            return cookie[TOKEN_COOKIE].value
    return _query_token(scope)


class GuardMiddleware:
    """ASGI middleware applying `check_request` to every HTTP and WebSocket connection."""

    def __init__(self, app, policy: GuardPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refusal = check_request(self.policy, scope)
        if refusal is not None:
            status, reason = refusal
            if scope["type"] == "websocket":
                # Closing before accepting makes the server answer the handshake with 403.
                await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
                return
            body = (reason + "\n").encode("utf-8")
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"cache-control", b"no-store")]})
            await send({"type": "http.response.body", "body": body})
            return
        if self.policy.token is not None and scope["type"] == "http" and _query_token(scope):
            return await self.app(scope, receive, _setting_cookie(send, self.policy.token))
        return await self.app(scope, receive, send)


def _setting_cookie(send, token: str):
    """Wrap `send` so the response stores the token in a strict, HTTP-only cookie."""
    cookie = f"{TOKEN_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict".encode("latin-1")

    async def wrapped(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
        await send(message)
    return wrapped
