"""Synix errors as HTTP answers: a status per failure kind and a one-line reason."""
from __future__ import annotations

from synix_resources.errors import ArtifactNotFound, ProjectNotFound, SearchError, ServeError, StoreError


def status_of(exc: Exception) -> int:
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
