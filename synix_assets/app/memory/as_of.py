"""What a memory held as of an instant: only records built from sources all dated up to then.

A record is dated by its earliest source (`meta.time.created_at`), so "dated up to T" let in a
core folded from every month since, or the rollup of a month that runs past T. The test is the
latest source (`engine/periods.built_by`). A fold's state that took in later sources gives way to
its latest checkpoint whose inputs all precede T: the state the fold had reached by then."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_assets.app.memory import search as _search
from synix_assets.engine.periods import built_by
from synix_resources.fingerprints import sequence_fingerprint

if TYPE_CHECKING:
    from synix_assets.app.memory.readers import Reader
    from synix_assets.app.memory.service import MemoryService

CHUNK = 50  # records read at a time while skipping the ones that took in later sources
ROUNDS = 5  # searches again, each without the records the last one found too late


def records(r: Reader, layer: str, limit: int, instant: str | None) -> list:
    """The newest `limit` current records of `layer`; with `instant`, only those built by then."""
    if instant is None:
        return r.page([layer], limit=limit)[1]
    kept: list = []
    offset = 0
    while len(kept) < limit:
        # begun by then (the earliest source): the cheap filter the store runs in SQL
        total, chunk = r.page([layer], offset=offset, limit=CHUNK, until=instant)
        kept += [a for a in chunk if built_by(a.metadata, instant)]
        offset += CHUNK
        if offset >= total:
            break
    return kept[:limit]


def fold_checkpoint(r: Reader, art, instant: str) -> dict | None:
    """The state of the fold record `art` after its longest prefix of inputs all built by
    `instant`, from a checkpoint of its version that folded exactly those inputs; or None."""
    version = art.metadata.get("meta.step.version_hash")
    if not version:
        return None
    inputs = r.store.parents(art.artifact_id)  # in fold order
    hashes = [a.content_hash for a in inputs]
    for cp in sorted(r.store.checkpoints(art.layer, version), key=lambda c: -c.position):
        prefix = inputs[:cp.position]
        if (0 < cp.position <= len(inputs) and cp.prefix_fingerprint == sequence_fingerprint(hashes[:cp.position])
                and all(built_by(a.metadata, instant) for a in prefix)):
            return {"layer": art.layer, "position": cp.position, "of": len(inputs),
                    "content": str(cp.state), "sources": [a.artifact_id for a in prefix]}
    return None


def hits(r: Reader, found: list[dict], instant: str) -> list[dict]:
    """The search hits whose records were built by `instant` (a hit the store no longer holds:
    not)."""
    present = r.store.existing_ids(h["artifact_id"] for h in found)
    arts = {a.artifact_id: a for a in r.store.get_many([h["artifact_id"] for h in found
                                                          if h["artifact_id"] in present], outline=True)}
    return [h for h in found if h["artifact_id"] in arts and built_by(arts[h["artifact_id"]].metadata, instant)]


def search(svc: MemoryService, query: str, *, branch: str, limit: int, instant: str) -> dict:
    """Ranked hits on records built by `instant`. A hit on a record that took in later sources
    hid what lies below it (altitude dedup): the search runs again without it, a few rounds at
    most (what is left after them is still only records built by then)."""
    exclude: set[str] = set()
    for _ in range(ROUNDS):
        found = _search.search(svc, query, branch=branch, layers=None, mode="fts", since=None,
                               until=instant, limit=limit, evidence=False, exclude=exclude)
        with svc.reader(branch) as r:
            kept = hits(r, found["hits"], instant)
        later = {h["artifact_id"] for h in found["hits"]} - {h["artifact_id"] for h in kept}
        found["hits"] = kept
        if not later:
            break
        exclude |= later
    return found
