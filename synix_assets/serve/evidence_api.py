"""The HTTP JSON API of the evidence ledger under /v1/events (design 003's L1), thin over the
application layer (`app/ledger.py`) like every other route. An append is on disk when it answers.
Names are `app/vocabulary.py`'s (`params.py` checks them); `POST /v1/events` is a write, so a
server started without `--writes` answers it 403."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict

from synix_assets.app import ledger
from synix_assets.serve.api import memory_for

router = APIRouter(prefix="/v1/events", tags=["evidence ledger"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewEvents(_Body):
    events: list[dict[str, Any]]


class EventIds(_Body):
    ids: list[str]


def _paths(request: Request):
    return memory_for(request).paths  # the ledger is the project's: every branch reads it


@router.post("", summary="append events (idempotent; answers every event's stable id)")
def append_events(request: Request, body: NewEvents) -> dict:
    return ledger.append_events(_paths(request), body.events).to_json()


@router.get("/search", summary="search_evidence: events matching the words (FTS5/BM25)")
def search_evidence(request: Request,
                    query: str = Query(..., description="Words to search for (older spelling: q)."),
                    limit: int = Query(10, ge=1, le=1000), source: str | None = None,
                    since: str | None = None, before: str | None = None) -> dict:
    return {"query": query, "events": ledger.search_evidence(_paths(request), query, limit=limit,
                                                             source=source, since=since, before=before)}


@router.get("/timeline", summary="browse_timeline: events in a time window, oldest first")
def browse_timeline(request: Request, limit: int = Query(50, ge=1, le=10000), source: str | None = None,
                    since: str | None = None, before: str | None = None) -> dict:
    events = ledger.browse_timeline(_paths(request), since=since, before=before, source=source, limit=limit)
    return {"events": [e.to_json() for e in events]}


@router.post("/resolve", summary="resolve_events: which ids the ledger holds")
def resolve_events(request: Request, body: EventIds) -> dict:
    return ledger.resolve_events(_paths(request), body.ids).to_json()
