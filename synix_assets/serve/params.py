"""The HTTP door's half of the vocabulary (`app/vocabulary.py`): before a /v1 request or an
explorer page reaches its handler, the query string's older spellings are renamed (`q` →
`query`, `layers` → `step`), a name the route does not take is a 400 naming what it accepts
(JSON for /v1, an HTML page for the explorer: a person reads it in a browser), and a write on
a server started read-only is a 403 naming the flag. JSON bodies go through the same
`resolve` in their models (`memory_api.py`)."""
from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Match

from synix_assets.app.vocabulary import resolve, served_by
from synix_resources.errors import UnknownParameter, WritesNotAllowed

ROUTES = served_by("http")
PAGES = served_by("explorer")


def api_routes(routes) -> list:
    """Every FastAPI route under `routes`, through included routers (FastAPI keeps an included
    router as one entry that hides its routes from matching by hand)."""
    from fastapi.routing import APIRoute

    out = []
    for route in routes:
        if isinstance(route, APIRoute):
            out.append(route)
        elif getattr(route, "original_router", None) is not None:
            out += api_routes(route.original_router.routes)
    return out


def _route(app, scope):
    for route in api_routes(app.router.routes):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route
    return None


def _refuse(status: int, exc) -> JSONResponse:
    return JSONResponse({"error": exc.one_line()}, status_code=status,
                        headers={"cache-control": "no-store"})


def vocabulary_checks(app, *, writes: bool, page_error=None):
    """Add the checks to a FastAPI `app` as a middleware (`writes`: may its routes write;
    `page_error(request, status, message)`: the explorer's HTML answer to a refused page)."""

    @app.middleware("http")
    async def checked(request: Request, call_next):
        api = request.url.path.startswith("/v1/")
        if not api and request.url.path.startswith("/static/"):
            return await call_next(request)
        route = _route(app, request.scope)
        key = f"{request.method} {getattr(route, 'path', '')}"
        cap = ROUTES.get(key) if api else PAGES.get(key)
        if cap is None:  # not a /v1 route or a page (tests/serve/test_vocabulary.py: all declared)
            return await call_next(request)
        if cap.writes and not writes:
            return _refuse(403, WritesNotAllowed(
                f"{cap.name} writes to the memory and this server is read-only",
                hint="start it with `synix serve --writes` (docs/doors.md)"))
        items = request.query_params.multi_items()
        try:
            names = resolve(cap.name, dict.fromkeys(k for k, _ in items),
                            door="http" if api else "explorer",
                            # a page's path parameters are not query names (/v1 keeps them)
                            extra=tuple(route.param_convertors) if api else (),
                            only=[p.alias for p in route.dependant.query_params],
                            label=None if api else f"the page {route.path}")
        except UnknownParameter as exc:
            if api or page_error is None:
                return _refuse(400, exc)
            return page_error(request, 400, exc.one_line())
        renamed = dict(zip(dict.fromkeys(k for k, _ in items), names))
        if any(k != v for k, v in renamed.items()):
            request.scope["query_string"] = urlencode([(renamed[k], v) for k, v in items]).encode()
        return await call_next(request)
