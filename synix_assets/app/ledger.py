"""The evidence ledger's use cases, for every door (CLI `synix evidence`, `Pipeline.append_events`
/ `search_evidence` / `browse_timeline` / `resolve_events`, HTTP `/v1/events`, MCP
`search_evidence` / `browse_timeline` / `append_events`), by the names `app/vocabulary.py` declares.

`resolve_events(paths, ids)` answers which ids the ledger holds (`found`, whole events) and which
it does not (`missing`: never appended, or forgotten). An agent memory write checks the events it
cites (`create_memory(source_event_ids=[…])`) with the same ledger `resolve`, from the engine
floor (`MemoryWriter._evidence`), and `get_memory` shows them through `resolve_events`.
"""
from __future__ import annotations

import json
import logging
import subprocess
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

from synix_assets.project import ProjectPaths
from synix_assets.sources.evidence import SYNTHESISED, FeedReport, feed, unread_bytes, unsynthesised
from synix_resources.errors import EvidenceRefused
from synix_resources.ledger.events import Event, new_event
from synix_resources.ledger.store import AppendResult, EvidenceLedger, Resolved
from synix_resources.process import helper, interrupts
from synix_resources.settings import settings
from synix_resources.store.memory import is_memory_location

log = logging.getLogger(__name__)
FEED_WORKER = "synix_assets.app.ledger_worker"  # the feed's helper process
POLL_S = 0.1  # how often a wait for the feed looks for Ctrl-C


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


class Synthesis:
    """The ledger's feed at the start of one build: done already (`seq`), or running in a helper
    process beside the build (`proc`, app/ledger_worker.py). Either way the same events are
    appended: the same `feed` over the same exports."""

    def __init__(self, seq: int | None = None, proc=None):
        self._seq, self._proc = seq, proc

    def wait(self) -> int | None:
        """The ledger's high-water mark once the feed ended; None if it did not finish (the next
        build feeds what is left: a file's events and its mark are written together)."""
        if self._proc is None:
            return self._seq
        while True:
            try:
                self._proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                if interrupts.received():  # Ctrl-C while the feed finishes: end it now
                    self.stop()
                    return None
        proc, self._proc = self._proc, None
        try:
            line = proc.stdout.readline()  # one short line: it fits the pipe, the process ended
        finally:
            helper.end(proc, grace_s=0)
        answer = json.loads(line) if line.strip() else {}
        if "high_water" not in answer:
            log.warning("the evidence ledger's feed did not finish (%s); the next build feeds "
                        "what is left", answer.get("error") or f"exit {proc.returncode}")
            return None
        self._seq = answer["high_water"]
        return self._seq

    def stop(self) -> None:
        """The build was interrupted: end the feed now (what it appended is kept)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            helper.end(proc, grace_s=0)


def begin_synthesis(paths: ProjectPaths, pipeline, store) -> Synthesis:
    """Feed the ledger; its high-water mark is what this build synthesises from. A feed with
    much to read (a first build reads every message of every export) runs in a second process,
    on the other core, while the build parses and summarises the same exports."""
    least = settings().background_feed_min_bytes
    with open_ledger(paths) as ledger:
        if (not least or is_memory_location(paths.store)
                or unread_bytes(pipeline, store, ledger) < least):
            feed(pipeline, store, ledger)
            return Synthesis(seq=ledger.high_water())
    return Synthesis(proc=helper.start(FEED_WORKER, {"root": str(paths.root), "branch": paths.branch}))


def end_synthesis(paths: ProjectPaths, synthesis: Synthesis) -> None:
    """A clean build synthesised every event up to the mark its feed reached."""
    seq = synthesis.wait()
    if seq is None:
        return
    with open_ledger(paths) as ledger:
        ledger.set_mark(SYNTHESISED, str(seq))
