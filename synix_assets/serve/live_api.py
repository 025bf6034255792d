"""`synix serve --home`: every tenant of a home under `/v1/tenants/{tenant}/…`, each request
authorised by the tenant's bearer token before anything else runs.

- live endpoints (this module): `POST ingest`, `POST sessions/{id}/close`, `GET sessions/{id}`,
  `GET status`, `GET brief` (the built memory plus the turns not built yet);
- the read endpoints of `synix serve` (`search`, `records/…`, `layers`, `timeline`, `context`,
  `map`) are the tenant's own memory API (serve/app.py) with the prefix taken off, so
  both stay one implementation.

A token opens exactly one tenant: any other tenant name in the path — existing or not — is a 403
that says nothing about it, and ids are looked up in the token's tenant's own files only.
"""
from __future__ import annotations

import threading

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from synix_assets.app.live import TenantServices
from synix_assets.serve.errors import internal_error_line, json_errors, validation_line
from synix_assets.serve.params import vocabulary_checks
from synix_resources.errors import (ArtifactNotFound, IdempotencyConflict, LiveInputError, LiveInputTooLarge,
                                    SessionNotFound, StoreError, SynixError, TenantError)
from synix_resources.live.requests import MAX_BODY_BYTES

PREFIX = "/v1/tenants/"
LIVE_ROUTES = ("ingest", "sessions", "brief", "status")
# The memory API endpoints a tenant gets (serve/api.py). Not `pipeline`: its staleness plan may
# settle a killed build's Dagster runs, which switches the process's DAGSTER_HOME — a server
# building other tenants meanwhile must never do that.
READ_ROUTES = ("search", "records", "layers", "timeline", "context", "map")
DRAIN_LIMIT = 64 * 1024 * 1024  # read (and drop) at most this much of an oversized body


def status_of(exc: SynixError) -> int:
    for cls, status in ((LiveInputTooLarge, 413), (LiveInputError, 400), (SessionNotFound, 404),
                        (ArtifactNotFound, 404), (IdempotencyConflict, 409), (TenantError, 400),
                        (StoreError, 503)):
        if isinstance(exc, cls):
            return status
    return 400


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers={"cache-control": "no-store"})


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, or LiveInputTooLarge once it passes `limit` (the rest is read and dropped up to
    DRAIN_LIMIT so the client gets the answer instead of a reset connection)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        elif size > DRAIN_LIMIT:
            break
    if size > limit:
        raise LiveInputTooLarge(f"the request body is over the {limit}-byte limit",
                                hint="post fewer or shorter turns per request")
    return b"".join(chunks)


def live_api(services: TenantServices) -> FastAPI:
    app = FastAPI(title="Synix live memory API", version="1", docs_url=None, redoc_url=None,
                  openapi_url=None)
    vocabulary_checks(app, writes=True)  # live ingest is what a home serves

    @app.post("/v1/tenants/{tenant}/ingest")
    async def ingest(tenant: str, request: Request):
        body = await read_body(request)
        return await run_in_threadpool(services.ingest, tenant, body, request.headers.get("idempotency-key"))

    @app.post("/v1/tenants/{tenant}/sessions/{session_id}/close")
    def close(tenant: str, session_id: str):
        return services.close_session(tenant, session_id)

    @app.get("/v1/tenants/{tenant}/sessions/{session_id}")
    def session(tenant: str, session_id: str, last: int | None = Query(None, ge=1, le=10_000)):
        return services.session(tenant, session_id, last=last)

    @app.get("/v1/tenants/{tenant}/status")
    def status(tenant: str):
        return {"tenant": tenant, **services.inboxes.get(tenant).status()}

    @app.get("/v1/tenants/{tenant}/brief")
    def brief(tenant: str, query: str | None = Query(None, description="older spelling: q"),
              budget_tokens: int = Query(2000, ge=100, le=200_000), hits: int = Query(5, ge=1, le=200),
              as_of: str | None = None, session: str | None = None):
        return services.brief(tenant, query, budget_tokens=budget_tokens, hits=hits, as_of=as_of,
                              session=session)

    @app.exception_handler(SynixError)
    async def synix_error(request: Request, exc: SynixError):
        return _error(status_of(exc), exc.one_line())

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError):
        return _error(400, validation_line(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        # Starlette calls this for what no handler above took, then re-raises it to the log.
        return _error(500, internal_error_line(exc))

    return app


class HomeApp:
    """The ASGI app of a home: authorise, then route to the live API or the tenant's memory API."""

    def __init__(self, services: TenantServices):
        self.services = services
        self.live = live_api(services)
        self._readers: dict[str, object] = {}
        self._lock = threading.Lock()

    def _reader_app(self, tenant: str):
        from synix_assets.serve.app import create_app

        service = self.services.memory(tenant)
        with self._lock:
            app = self._readers.get(tenant)
            if app is None or app.state.service is not service:
                app = self._readers[tenant] = create_app(service)
            return app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.live(scope, receive, send)
        if scope["type"] != "http":
            return None
        path = scope["path"]
        if path == "/healthz":
            return await JSONResponse({"ok": True})(scope, receive, send)
        if not path.startswith(PREFIX):
            return await _error(404, "no such endpoint: the API is under /v1/tenants/{tenant}/… "
                                     "(docs/live.md)")(scope, receive, send)
        tenant, _, rest = path[len(PREFIX):].partition("/")
        refusal = await run_in_threadpool(self.services.authorise, tenant, _bearer(scope))
        if refusal is not None:
            return await _error(*refusal)(scope, receive, send)
        head = rest.split("/", 1)[0]
        if head in LIVE_ROUTES:
            return await self.live(scope, receive, send)
        if head not in READ_ROUTES:
            return await _error(404, f"no endpoint {head!r} for a tenant — use one of "
                                     f"{', '.join(LIVE_ROUTES + READ_ROUTES)}")(scope, receive, send)
        try:
            app = await run_in_threadpool(self._reader_app, tenant)
        except SynixError as exc:
            return await _error(status_of(exc), exc.one_line())(scope, receive, send)
        inner = dict(scope)
        inner["path"] = "/v1/" + rest
        inner["raw_path"] = inner["path"].encode()
        return await app(inner, receive, send)


def _bearer(scope) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == b"authorization":
            text = value.decode("latin-1")
            if text.lower().startswith("bearer "):
                return text[7:].strip()
    return None


def run_home_server(home, *, host: str, port: int, allowed_hosts: tuple[str, ...] = (), worker: bool = True,
                    interval_s: float = 2.0) -> None:
    """Serve every tenant of `home` until Ctrl-C/SIGTERM, with the live worker building closed
    sessions in the background (unless `worker=False`)."""
    from synix_assets.live.worker import Worker
    from synix_assets.web.guard import GuardPolicy
    from synix_assets.web.serving import make_server, serve_until_stopped

    # A tenant request must carry its bearer token, which a cross-site page cannot add without
    # a CORS preflight (never answered): that is the guard's proof for POSTs here.
    policy = GuardPolicy(port=port, bind_host=host, allowed_hosts=allowed_hosts,
                         json_is_proof=True, bearer_is_proof=True)
    services = TenantServices(home)
    # json_errors: what fails in HomeApp's own routing (outside the FastAPI apps) is a JSON 500 too.
    server = make_server(json_errors(HomeApp(services)), policy, host=host, port=port)
    builder = Worker(home, interval_s=interval_s).start() if worker else None

    def stop() -> None:
        if builder is not None:
            builder.stop()
        services.close()

    serve_until_stopped(server, on_stop=stop)
