"""Synix errors as HTTP answers: a status per failure kind and a one-line reason."""
from __future__ import annotations

from synix_resources.errors import (ArtifactNotFound, ProjectNotFound, SearchError, ServeError, StoreError,
                                    WritesNotAllowed)


def status_of(exc: Exception) -> int:
    if isinstance(exc, WritesNotAllowed):
        return 403
    if isinstance(exc, (ArtifactNotFound, ProjectNotFound)):
        return 404
    if isinstance(exc, (SearchError, ServeError)):
        return 400
    if isinstance(exc, StoreError):
        return 503
    return 400


def validation_line(exc, noun: str = "parameter", skip: tuple = ("query", "path", "body")) -> str:
    """A pydantic/FastAPI validation error list as one line naming each bad `noun`
    (`skip`: location parts that say where, not what — FastAPI's query/path/body)."""
    parts = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p not in skip]
        parts.append(f"bad {noun} {'.'.join(loc) or '?'}: {err.get('msg', 'invalid')}")
    return " ".join("; ".join(parts).split()) or "bad request"


def internal_error_line(exc: BaseException) -> str:
    """What a client is told of an error no handler expected: one line, the exception's kind
    only (its text may hold the caller's data); the traceback goes to the server's log."""
    return (f"internal error ({type(exc).__name__}) while answering this request — a bug in "
            "Synix; the server's log has the details")


def json_errors(app):
    """ASGI wrapper: an HTTP request whose app raised before answering gets a JSON 500 with
    one line instead of the server's plain-text one; the exception still reaches the server,
    which logs it."""
    from starlette.responses import JSONResponse

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, tracked)
        except Exception as exc:
            if not started:
                await JSONResponse({"error": internal_error_line(exc)}, status_code=500,
                                   headers={"cache-control": "no-store"})(scope, receive, send)
            raise
    return wrapped
