"""An agent's memories searchable the moment they are written: after a write is made into
records (`apply_log`, under the build lock), the branch's search index gets the memories now
held and drops the ones retired — documents built on the index's own rows of the records each
memory cites (its ancestry, leaves and source conversations), so the default search ranks a
memory beside everything else, by the same scores. The next build writes the same documents
from the store (`projections.IndexSource` always indexes the held memories)."""
from __future__ import annotations

from synix_assets.engine.projections import artifact_title
from synix_assets.project import ProjectPaths
from synix_resources.agent_memory import MEMORY_LAYER
from synix_resources.search.documents import IndexDoc


def index_memories(paths: ProjectPaths, store) -> dict | None:
    """Bring the index's agent memories in line with `store`'s held ones (None: no index yet,
    the first build makes it). Returns {"added", "removed"}."""
    if not paths.search.exists():
        return None
    from synix_resources.search.index import SearchIndex  # numpy and sqlite_utils: only here

    held = {a.artifact_id: a for a in store.list_layer(MEMORY_LAYER)
            if a.metadata.get("state") == "active"}
    index = SearchIndex(paths.search, embeddings=False)
    try:
        indexed = set(index.layer_ids(MEMORY_LAYER))
        new = [a for aid, a in held.items() if aid not in indexed]
        gone = [aid for aid in indexed if aid not in held]
        if not new and not gone:
            return {"added": 0, "removed": 0}
        cited = index.provenance({p for a in new for p in a.parent_ids})
        collections = {c["collection"] for c in cited.values()} or set(index.stats()["collections"])
        if index.has_vectors():  # a memory gets a vector like every other document
            index.close()
            index = SearchIndex(paths.search, embeddings="auto")
        removed = index.remove(gone)
        if new and collections:
            index.update(sorted(collections)[0], [_document(a, cited) for a in new])
        return {"added": len(new) if collections else 0, "removed": removed}
    finally:
        index.close()


def _document(art, cited: dict[str, dict]) -> IndexDoc:
    """The index document of a memory, its provenance that of the records it cites."""
    parents = [p for p in art.parent_ids if p in cited]
    ancestry: dict[str, None] = {}
    leaves: dict[str, None] = {}
    sources: dict[str, dict] = {}
    for p in parents:
        below = cited[p]
        ancestry.update(dict.fromkeys([p, *below["ancestry"]]))
        leaves.update(dict.fromkeys(below["leaf_ids"] or [p]))
        for s in below["sources"]:
            sources.setdefault(s.get("artifact_id") or s.get("conversation_id"), s)
    m = art.metadata
    return IndexDoc(artifact_id=art.artifact_id, layer=art.layer, level=art.level,
                    content=art.content, content_hash=art.content_hash, title=artifact_title(art),
                    date=m.get("meta.time.created_at"), parent_ids=tuple(art.parent_ids),
                    leaf_ids=tuple(leaves), ancestry=tuple(ancestry),
                    sources=tuple(sources.values()), searchable=True)
