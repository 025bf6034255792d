"""What the caller hands to the search index: one `IndexDoc` per artifact, provenance included.

The index never reads the artifact store; whoever builds the docs resolves provenance first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from synix_resources.fingerprints import canonical_json, sha256_text


@dataclass(frozen=True)
class IndexDoc:
    """One artifact as the search index sees it.

    - `level`: altitude (0 = transcript/leaf, 1 = episode, 2 = rollup, 3 = core memory).
    - `parent_ids`: direct parents (one hop down the provenance DAG).
    - `leaf_ids`: the level-0 artifacts it was built from (empty for a leaf).
    - `ancestry`: every artifact id below it in provenance (used for highest-altitude dedup).
    - `sources`: one dict per source transcript: `{conversation_id, title, date,
      message_range: [first, last]}` (message positions, inclusive).
    - `messages`: optional per-message breakdown of a transcript, each
      `{"index": int, "id": str, "speaker": str, "text": str}`; when given, the index searches
      message by message (with neighbouring messages as context) so a hit names its messages.
    - `searchable=False`: a leaf found only by `exact=True` search and by drill-down.
    - `meta_key`: the caller's own exact hash of everything but the content, used as the meta
      hash instead of hashing the fields. A caller that derives `messages` from the content
      sets it so it can diff its documents against `SearchIndex.doc_hashes` without reading
      any content (synix's search projection: `engine/projections.py` `IndexSource`).
    """

    artifact_id: str
    layer: str
    level: int
    content: str
    content_hash: str
    title: str = ""
    date: str | None = None
    source: str | None = None
    metadata: dict = field(default_factory=dict)
    parent_ids: tuple = ()
    leaf_ids: tuple = ()
    ancestry: tuple = ()
    sources: tuple = ()
    searchable: bool = True
    messages: tuple = ()
    meta_key: str = ""

    def meta_hash(self) -> str:
        """Hash of everything but the content: a change here re-indexes without re-embedding."""
        if self.meta_key:
            return self.meta_key
        return sha256_text(canonical_json({
            "layer": self.layer, "level": self.level, "title": self.title, "date": self.date,
            "source": self.source, "metadata": self.metadata,
            "parent_ids": list(self.parent_ids), "leaf_ids": list(self.leaf_ids),
            "ancestry": list(self.ancestry), "sources": list(self.sources),
            "searchable": self.searchable, "messages": list(self.messages),
        }))


@dataclass(frozen=True)
class SyncStats:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0


class HitSources(list):
    """The hit's source transcripts (list of dicts); calling it walks one hop down instead.

    The design's drill-down API is `hit.sources()` → direct parents, while a hit also carries
    `hit.sources` → the source transcripts with message ranges; a callable list serves both.
    """

    def __init__(self, items, parent_ids: tuple):
        super().__init__(items)
        self.parent_ids = tuple(parent_ids)

    def __call__(self) -> list[str]:
        return list(self.parent_ids)


@dataclass
class Hit:
    """One search result. `provenance` = the leaf ids it was built from (itself for a leaf);
    `sources` = source transcripts `{conversation_id, title, date, message_range}`, narrowed to
    the matched messages when the hit is a transcript searched message by message;
    `message_range`/`message_ids` = the matched messages (None/() when not a transcript)."""

    artifact_id: str
    layer: str
    level: int
    score: float
    snippet: str
    title: str = ""
    date: str | None = None
    provenance: tuple = ()
    sources: HitSources = field(default_factory=lambda: HitSources([], ()))
    content: str = ""
    parent_ids: tuple = ()
    message_range: tuple | None = None
    message_ids: tuple = ()
    pii: dict | None = None  # kinds and counts of PII found in the artifact (pii="flag"/"redact")

    def leaves(self, max_count: int = 100) -> list[str]:
        """Deduplicated leaf records under this hit (original transcripts)."""
        return list(dict.fromkeys(self.provenance))[:max_count]

    def to_dict(self) -> dict:
        return {
            "artifact_id": self.artifact_id, "layer": self.layer, "level": self.level,
            "score": self.score, "snippet": self.snippet, "provenance": list(self.provenance),
            "sources": [dict(s) for s in self.sources], "pii": self.pii,
        }


class SearchResults(list):
    """A list of hits plus how they were found: `mode` is the mode actually used, and
    `fallback`/`notice` say when semantic or hybrid search fell back to full-text search;
    `weak`: an unscoped search whose words the summaries do not all hold, so the source
    transcripts were ranked with them."""

    def __init__(self, hits=(), *, mode: str = "fts", requested_mode: str = "fts",
                 notice: str | None = None, weak: bool = False):
        super().__init__(hits)
        self.mode = mode
        self.requested_mode = requested_mode
        self.notice = notice
        self.weak = weak

    @property
    def fallback(self) -> bool:
        return self.mode != self.requested_mode
