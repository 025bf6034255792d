"""The `synix serve` ASGI app: the /v1 JSON API, the explorer pages and their static files.

The guard (Host/Origin/token) wraps this app where it is served (`run_server`), so tests and
embedders can mount the bare app elsewhere.
"""
from __future__ import annotations

from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from synix_assets.app.memory import BranchServices, MemoryService
from synix_assets.serve import api, evidence_api, explorer, memory_api
from synix_assets.serve.errors import internal_error_line, status_of, validation_line
from synix_assets.serve.params import vocabulary_checks
from synix_resources.errors import SynixError


def create_app(service: MemoryService, *, writes: bool = False) -> FastAPI:
    """The app serving `service`'s project; `writes`: the agent-memory write routes are
    answered (else 403, `params.py`)."""
    # docs_url=None: the default /docs page loads Swagger UI from a CDN; ours is vendored.
    app = FastAPI(title="Synix memory API", version="1", docs_url=None, redoc_url=None,
                  description="A built Synix memory: search with provenance, agent-written memories, "
                              "records, lineage, layers, timeline, the context document and a "
                              "prompt-ready brief.")
    app.state.service = service
    app.state.branches = BranchServices(service)  # ?branch=NAME reads that branch's memory

    @app.middleware("http")
    async def chosen_branch(request: Request, call_next):
        # A page without ?branch= shows the branch picked in the switcher (a cookie); the JSON
        # API always says which branch it reads, so it is left alone.
        chosen = request.cookies.get(explorer.BRANCH_COOKIE)
        if chosen and chosen != "main" and "branch" not in request.query_params \
                and not request.url.path.startswith(("/v1", "/static", "/branch")):
            query = request.scope.get("query_string", b"")
            extra = urlencode({"branch": chosen}).encode()
            request.scope["query_string"] = query + b"&" + extra if query else extra
        return await call_next(request)
    vocabulary_checks(app, writes=writes, page_error=lambda request, status, message:
                      explorer.render(request, "error.html", status=status, message=message))
    app.include_router(api.router)
    app.include_router(memory_api.router)
    app.include_router(evidence_api.router)
    app.include_router(explorer.router)
    app.mount("/static", StaticFiles(directory=explorer.HERE / "static"), name="static")

    @app.get("/docs", include_in_schema=False)
    def docs():
        return get_swagger_ui_html(openapi_url="/openapi.json", title="Synix memory API",
                                   swagger_js_url="/static/swagger/swagger-ui-bundle.js",
                                   swagger_css_url="/static/swagger/swagger-ui.css",
                                   swagger_favicon_url="/static/swagger/favicon-32x32.png")

    def answer(request: Request, status: int, message: str):
        if request.url.path.startswith("/v1") or request.url.path.startswith("/openapi"):
            return JSONResponse({"error": message}, status_code=status)
        return explorer.render(request, "error.html", status=status, message=message)

    @app.exception_handler(SynixError)
    async def synix_error(request: Request, exc: SynixError):
        return answer(request, status_of(exc), exc.one_line())

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError):
        return answer(request, 400, validation_line(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return answer(request, exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        # Starlette calls this for what no handler above took, then re-raises it to the log.
        return answer(request, 500, internal_error_line(exc))

    return app


def run_server(service: MemoryService, *, host: str, port: int, token: str | None = None,
               allowed_hosts: tuple[str, ...] = (), writes: bool = False) -> None:
    """Serve until Ctrl-C/SIGTERM, behind the guard; closes the service's readers after."""
    from synix_assets.web.guard import GuardPolicy
    from synix_assets.web.serving import make_server, serve_until_stopped

    policy = GuardPolicy(port=port, bind_host=host, token=token, allowed_hosts=allowed_hosts)
    app = create_app(service, writes=writes)
    serve_until_stopped(make_server(app, policy, host=host, port=port),
                        on_stop=app.state.branches.close)
