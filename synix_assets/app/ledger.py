"""The evidence ledger's use cases, for every door (CLI `synix evidence`, `Pipeline.append_events`
/ `search_evidence` / `browse_timeline` / `resolve_events`, HTTP `/v1/events`, MCP
`search_evidence` / `browse_timeline` / `append_events`), by the names `app/vocabulary.py` declares.

`resolve_events(paths, ids)` answers which ids the ledger holds (`found`, whole events) and which
it does not (`missing`: never appended, or forgotten). An agent memory write checks the events it
cites (`create_memory(source_event_ids=[…])`) with the same ledger `resolve`, from the engine
floor (`MemoryWriter._evidence`), and `get_memory` shows them through `resolve_events`.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

from synix_assets.project import ProjectPaths
from synix_assets.sources.evidence import SYNTHESISED, FeedReport, feed, unsynthesised
from synix_resources.errors import EvidenceRefused
from synix_resources.ledger.events import Event, new_event
from synix_resources.ledger.store import AppendResult, EvidenceLedger, Resolved


@contextmanager
def open_ledger(paths: ProjectPaths) -> Iterator[EvidenceLedger]:
    ledger = EvidenceLedger(paths.ledger)
    try:
        yield ledger
    finally:
        ledger.close()


def sync_evidence(paths: ProjectPaths, store=None) -> FeedReport:
    """Append what is new in the project's exports and live inboxes (idempotent)."""
    pipeline = paths.load_pipeline()
    own = store is None
    store = paths.open_store() if own else store
    try:
        with open_ledger(paths) as ledger:
            return feed(pipeline, store, ledger)
    finally:
        if own:
            store.close()


def append_events(paths: ProjectPaths, events: Iterable[Mapping]) -> AppendResult:
    """Append events given as fields (checked whole first: one bad event appends none)."""
    checked = [new_event(e) for e in events]
    if not checked:
        raise EvidenceRefused("no events to append", hint="give at least one event")
    with open_ledger(paths) as ledger:
        return ledger.append(checked)


def search_evidence(paths: ProjectPaths, query: str, *, limit: int = 10, source: str | None = None,
                    since: str | None = None, before: str | None = None) -> list[dict]:
    with open_ledger(paths) as ledger:
        return [{**e.to_json(), "score": round(-score, 6)}
                for e, score in ledger.search(query, limit=limit, source=source, since=since, before=before)]


def browse_timeline(paths: ProjectPaths, *, since: str | None = None, before: str | None = None,
                    source: str | None = None, limit: int = 50) -> list[Event]:
    with open_ledger(paths) as ledger:
        return ledger.timeline(since=since, before=before, source=source, limit=limit)


def resolve_events(paths: ProjectPaths, ids: Iterable[str]) -> Resolved:
    """Which of `ids` the ledger holds (`found`, in the order asked) and which not (`missing`)."""
    if not paths.ledger.is_file():
        return Resolved(found=[], missing=list(dict.fromkeys(ids)))
    with open_ledger(paths) as ledger:
        return ledger.resolve(ids)


def ledger_status(paths: ProjectPaths) -> dict:
    with open_ledger(paths) as ledger:
        return {"path": str(paths.ledger), "events": ledger.count(), "sources": ledger.sources(),
                "unsynthesised": unsynthesised(ledger)}


def begin_synthesis(paths: ProjectPaths, pipeline, store) -> int:
    """Feed the ledger and return its high-water mark: what this build synthesises from."""
    with open_ledger(paths) as ledger:
        feed(pipeline, store, ledger)
        return ledger.high_water()


def end_synthesis(paths: ProjectPaths, seq: int) -> None:
    """A clean build synthesised every event up to `seq`."""
    with open_ledger(paths) as ledger:
        ledger.set_mark(SYNTHESISED, str(seq))
