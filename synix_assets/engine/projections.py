"""Projections: the search index (the agent's RAG) and the context document (its system prompt).

Both are keyed by the exact set of artifacts they read and by their whole configuration (the
layers an index reads and whether it embeds; the document's path and, through its text, its
budget), so a build that changed nothing they use touches neither the index nor the file, and a
changed configuration alone is applied by the next `synix run`.
"""
from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple

from synix_assets.engine import background_index, projection_hooks
from synix_assets.sources.reader import portable_name
from synix_resources.agent_memory import MEMORY_LAYER
from synix_resources.disk import mapped_disk_full
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.llm.mapreduce import estimate_tokens
from synix_resources.private import tighten, write_private_text
from synix_resources.search.documents import IndexDoc
from synix_resources.search.units import UNIT_FORMAT

_SOURCE_MARK = re.compile(r"[ \t]*\[(?:state|[a-z0-9_-]+-[0-9a-f]{16})\]")
_MESSAGE_HEAD = re.compile(r"^\[#(\d+)(?: ([^\]]*))?\] (.+?):$", re.M)
# Bumped whenever what `IndexSource.document` derives from an artifact changes (its title,
# sources, messages…) or how the index cuts a document into units: every document's meta key
# changes with it, so each is written again.
DOC_FORMAT = f"index-doc-2/{UNIT_FORMAT}"
CONTENT_BATCH = 200  # documents read from the store with their contents at a time
# The metadata keys a document is made from (title, date, source, sources, kept metadata).
_DOCUMENT_META = frozenset({
    "meta.chat.title", "meta.chat.conversation_id", "meta.chat.message_range",
    "meta.chat.message_count", "meta.time.created_at", "meta.time.period", "meta.custom.topic",
    "meta.custom.pii", "meta.source.type"})


@dataclass
class ProjectionResult:
    name: str
    kind: str
    changed: bool
    detail: dict


def transcript_messages(content: str) -> tuple[dict, ...]:
    """Split a rendered transcript back into its numbered messages."""
    heads = list(_MESSAGE_HEAD.finditer(content))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(content)
        out.append({"index": int(m.group(1)), "id": m.group(1), "speaker": m.group(3),
                    "text": content[m.end():end].strip()})
    return tuple(out)


class _Outline(NamedTuple):
    """An artifact as a search document needs it without its content."""
    artifact_id: str
    layer: str
    group_key: str
    level: int
    content_hash: str
    parent_ids: tuple
    metadata: dict


class IndexSource:
    """What a search index over `layers` is made of, read without any content.

    The store's outlines of every current artifact (ids, content hashes, metadata, ordered
    parents: the whole provenance graph, small without texts) give each document the index
    should hold — the named layers plus the leaves under them, leaves searchable only if named,
    and every other layer hidden (found only by a search that names it) — and its expected `(content hash, meta key)`. The meta key hashes everything a document
    holds but its content (title, date, metadata, parents, leaves, ancestry, sources,
    searchability) plus DOC_FORMAT; the rest (the text and the messages a transcript is split
    into) is a function of the content, which the content hash covers. So comparing these
    pairs with the ones the index stores finds exactly the documents to write, and contents are
    read only for those (`documents`)."""

    def __init__(self, ctx, layers: tuple[str, ...]):
        # The agent_memories records held now are always indexed, searchable: an agent's
        # memories (written over MCP, HTTP, the CLI, Python or by an agent step, which named
        # here stands for them; its own records, what each loop read, stay hidden) rank with
        # the rest in every door.
        agents = {l for l in layers if l in ctx.pipeline.steps and ctx.pipeline.steps[l].kind == "agent"}
        self.ctx = ctx
        self.layers = tuple(l for l in layers if l not in agents) + (MEMORY_LAYER,)
        self.arts: dict[str, _Outline] = {}
        for layer in [*ctx.pipeline.layer_order(), MEMORY_LAYER]:
            for a in ctx.store.outlines(layer):
                if layer == MEMORY_LAYER and a.metadata.get("state") != "active":
                    continue  # a superseded or retired memory is read through its history
                # only the metadata a document uses is kept: at 10,000 conversations the rest
                # (paths, version hashes, providers…) would be most of the outlines' memory
                self.arts[a.artifact_id] = _Outline(
                    a.artifact_id, a.layer, a.group_key, a.level, a.content_hash, a.parent_ids,
                    {k: v for k, v in a.metadata.items() if k in _DOCUMENT_META})
        self._ancestry: dict[str, tuple[str, ...]] = {}
        self._sources: dict[str, dict] = {}
        self._source_digests: dict[str, str] = {}
        arts = self.arts
        wanted = [a.artifact_id for a in arts.values() if a.layer in self.layers]
        leaf_ids = {aid for w in wanted for aid in self.ancestry(w)
                    if aid in arts and not arts[aid].parent_ids}
        leaves = [aid for aid in leaf_ids if arts[aid].layer not in self.layers]
        # every other layer is indexed too, hidden: a search that names it finds it (§4.6)
        named = set(wanted) | set(leaves)
        leaves += [aid for aid, a in arts.items() if aid not in named and a.layer not in self.layers]
        # doc id → (content hash, meta key), in artifact id order
        self.expected: dict[str, tuple[str, str]] = {}
        for aid in sorted([*wanted, *leaves]):
            self.expected[aid] = (arts[aid].content_hash, self._meta_key(self._fields(aid)))

    def key(self, config: dict) -> str:
        """Exact key of the index: the projection's config and every document's pair."""
        return sha256_text("\n".join([canonical_json(config),
                                       *(f"{aid}:{ch}:{mk}" for aid, (ch, mk) in self.expected.items())]))

    def ancestry(self, aid: str) -> tuple[str, ...]:
        """Every id below `aid` in provenance, breadth first (ids no longer current included,
        not walked further)."""
        if aid not in self._ancestry:
            seen: dict[str, None] = {}
            queue = deque(self.arts[aid].parent_ids) if aid in self.arts else deque()
            while queue:
                pid = queue.popleft()
                if pid in seen:
                    continue
                seen[pid] = None
                if pid in self.arts:
                    queue.extend(self.arts[pid].parent_ids)
            self._ancestry[aid] = tuple(seen)
        return self._ancestry[aid]

    def _fields(self, aid: str) -> dict:
        """Every field of the document of `aid` but its content and messages."""
        arts = self.arts
        a = arts[aid]
        anc = self.ancestry(aid)
        leafs = (aid,) if not a.parent_ids else tuple(x for x in anc if x in arts and not arts[x].parent_ids)
        return dict(
            artifact_id=a.artifact_id, layer=a.layer, level=a.level, content_hash=a.content_hash,
            title=artifact_title(a), date=a.metadata.get("meta.time.created_at"), source=_source_type(a),
            metadata={k: v for k, v in a.metadata.items()
                      if k in ("meta.time.period", "meta.custom.topic", "meta.custom.pii",
                               "meta.chat.conversation_id")},
            parent_ids=tuple(a.parent_ids), leaf_ids=leafs, ancestry=anc,
            sources=tuple(self._source(x) for x in leafs), searchable=a.layer in self.layers)

    def _meta_key(self, fields: dict) -> str:
        # Each source (a function of its leaf's outline) enters by its digest: a rollup over
        # thousands of conversations is not serialised again with every one of their sources.
        hashed = {**fields, "sources": [self._source_digest(x) for x in fields["leaf_ids"]]}
        return sha256_text(f"{DOC_FORMAT}\n{canonical_json(hashed)}")

    def _source(self, leaf_id: str) -> dict:
        if leaf_id not in self._sources:
            self._sources[leaf_id] = _source_of(self.arts[leaf_id])
        return self._sources[leaf_id]

    def _source_digest(self, leaf_id: str) -> str:
        if leaf_id not in self._source_digests:
            self._source_digests[leaf_id] = sha256_text(canonical_json(self._source(leaf_id)))
        return self._source_digests[leaf_id]

    def document(self, stored) -> IndexDoc:
        """The whole document of `stored` (an artifact read with its content)."""
        fields = {**self._fields(stored.artifact_id), "content_hash": stored.content_hash}
        is_leaf = not fields["parent_ids"]
        return IndexDoc(content=stored.content, **fields, meta_key=self._meta_key(fields),
                        messages=transcript_messages(stored.content) if is_leaf else ())

    def documents(self, ids: list[str]) -> Iterator[IndexDoc]:
        """Whole documents for these ids, their contents read CONTENT_BATCH at a time."""
        for start in range(0, len(ids), CONTENT_BATCH):
            for art in self.ctx.store.get_many(ids[start:start + CONTENT_BATCH]):
                yield self.document(art)


def artifact_title(a) -> str:
    """A human title: the conversation's, else the rollup's period or topic."""
    m = a.metadata
    if m.get("meta.chat.title"):
        return str(m["meta.chat.title"])
    if m.get("meta.time.period"):
        return f"{a.layer} {m['meta.time.period']}"
    if m.get("meta.custom.topic"):
        return f"{a.layer}: {m['meta.custom.topic']}"
    return f"{a.layer} {a.group_key}"


def _source_type(a) -> str | None:
    t = a.metadata.get("meta.source.type")
    return str(t).removesuffix("-export") if t else None


def _source_of(leaf) -> dict:
    m = leaf.metadata
    rng = m.get("meta.chat.message_range") or [1, m.get("meta.chat.message_count", 0)]
    return {"conversation_id": m.get("meta.chat.conversation_id", leaf.group_key),
            "title": m.get("meta.chat.title", ""), "date": (m.get("meta.time.created_at") or "")[:10] or None,
            "message_range": list(rng), "artifact_id": leaf.artifact_id}


def _search_source(ctx, name: str) -> tuple[str, IndexSource]:
    proj = ctx.pipeline.projections[name]
    source = IndexSource(ctx, proj.from_)
    return source.key({"from": list(proj.from_), "embeddings": proj.embeddings}), source


def sync_search_index(ctx, name: str) -> ProjectionResult:
    """Bring the search index `name` up to date. A large whole build may have written it in its
    background process meanwhile (engine/background_index.py): this then finds it current and
    reports what the background wrote, so the result is the same whichever process wrote it."""
    written = background_index.take(ctx.run_id, ctx.paths.branch, name)
    result = write_search_index(ctx, name)
    if written is not None and written.changed and not result.changed \
            and written.key == ctx.store.get_meta(f"projection:{name}:key"):
        return ProjectionResult(name, "search_index", True, dict(written.detail))
    return result


def write_search_index(ctx, name: str) -> ProjectionResult:
    proj = ctx.pipeline.projections[name]
    key, source = _search_source(ctx, name)
    if ctx.store.get_meta(f"projection:{name}:key") == key and ctx.paths.search.exists():
        return ProjectionResult(name, "search_index", False, {"documents": len(source.expected)})
    # Switching embeddings on or off changes no document, so each one is indexed again: with
    # vectors, or without (and the vectors no document uses are dropped).
    reindex = ctx.store.get_meta(f"projection:{name}:embeddings") != proj.embeddings
    # imported here: numpy and sqlite_utils cost every process that loads the definitions (each
    # run worker of a distributed build) most of a second, and only the projection step needs them
    from synix_resources.search.index import SearchIndex

    index = SearchIndex(ctx.paths.search, embeddings=proj.embeddings, vector_cache=ctx.paths.vector_cache)
    try:
        # Only the documents whose (content hash, meta key) differ from the index's are read
        # with their contents and written, a batch at a time; the ones gone are removed.
        indexed = index.doc_hashes(name)
        todo = [aid for aid, pair in source.expected.items() if reindex or indexed.get(aid) != pair]
        gone = [aid for aid in indexed if aid not in source.expected]
        stats = index.update(name, source.documents(todo), remove=gone, reindex=reindex)
    finally:
        index.close()
    ctx.store.set_meta(f"projection:{name}:embeddings", proj.embeddings)
    ctx.store.set_meta(f"projection:{name}:key", key)
    return ProjectionResult(name, "search_index", True,
                            {"documents": len(source.expected), "added": stats.added,
                             "updated": stats.updated, "removed": stats.removed,
                             "unchanged": len(source.expected) - len(todo) + stats.unchanged,
                             "embeddings": proj.embeddings})


def _fit(text: str, budget_tokens: int) -> str:
    if estimate_tokens(text) <= budget_tokens:
        return text
    limit = budget_tokens * 4
    cut = text[:limit]
    stop = max(cut.rfind(". "), cut.rfind("\n"))
    return (cut[:stop + 1] if stop > limit // 2 else cut).rstrip() + "\n\n[…truncated to fit the budget]"


def render_context_doc(ctx, name: str) -> tuple[str, list]:
    proj = ctx.pipeline.projections[name]
    arts = ctx.store.list_layer(proj.from_)
    # Source markers an extractive summary carries ("[episodes-…]", "[state]") are provenance, which
    # the footer and `synix lineage` give; in a system prompt they are noise.
    body = "\n\n".join(_SOURCE_MARK.sub("", a.content).strip() for a in arts)
    drawn = sorted({gk for a in arts for gk in a.metadata.get("meta.custom.groups", [a.group_key])})
    footer_lines = [f"Drawn from {proj.from_} ({len(arts)} artifact{'s' if len(arts) != 1 else ''}: "
                    f"{', '.join(a.artifact_id for a in arts)})"]
    if drawn:
        footer_lines.append(f"Covers: {', '.join(drawn[:24])}{' …' if len(drawn) > 24 else ''}")
    providers = sorted({str(a.metadata.get("meta.step.provider")) for a in arts if a.metadata.get("meta.step.provider")})
    if "extractive" in providers:
        footer_lines.append("Built offline by the extractive summariser (selected sentences, no LLM).")
    build_id = sha256_text("".join(a.artifact_id for a in arts))[:12]
    built = max((a.created_at for a in arts), default="")
    footer_lines.append(f"Build {build_id}, {built[:19].replace('T', ' ')} UTC — Synix")
    footer = "\n".join(f"<!-- {line} -->" for line in footer_lines)
    budget = max(50, proj.budget_tokens - estimate_tokens(footer) - 20)
    title = f"# Memory of {ctx.pipeline.agent or ctx.pipeline.name}"
    text = f"{title}\n\n{_fit(body, budget)}\n\n---\n{footer}\n"
    return text, arts


def _context_key(pipeline, path, text: str) -> str:
    # The path is part of the key: moving the document back to an old path rewrites that file;
    # relative to the project when inside it, so a copied or unpacked project is up to date.
    return sha256_text(f"{portable_name(pipeline, Path(path))}\n{text}")


def write_context_doc(ctx, name: str) -> ProjectionResult:
    proj = ctx.pipeline.projections[name]
    path = ctx.paths.output_file(ctx.pipeline, proj.path)
    text, arts = render_context_doc(ctx, name)
    key = _context_key(ctx.pipeline, path, text)
    if not arts:  # nothing current to draw from (failed, blocked, retired): a document drawn
        # from nothing would tell the agent it remembers nothing, so the one it had is kept and
        # none is written on a first build
        return ProjectionResult(name, "context_doc", False, {
            "path": str(path), "artifacts": 0,
            "kept" if path.exists() else "not_written":
                f"{proj.from_} has no current artifact; the document was "
                + ("left as it was" if path.exists() else "not written")})
    if path.exists() and ctx.store.get_meta(f"projection:{name}:key") == key:
        return ProjectionResult(name, "context_doc", False, {"path": str(path), "artifacts": len(arts)})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with mapped_disk_full(path, "writing the context document"):
            write_private_text(tmp, text)
            os.replace(tmp, path)  # atomic: a reader never sees half a file
    finally:
        tmp.unlink(missing_ok=True)  # a failed write leaves no half file behind
    ctx.store.set_meta(f"projection:{name}:key", key)
    return ProjectionResult(name, "context_doc", True,
                            {"path": str(path), "artifacts": len(arts), "tokens": estimate_tokens(text)})


def tighten_context_docs(pipeline) -> None:
    """Context documents are the agent's memory, private like .synix/; projects from before
    that wrote them 0644, and a no-op build does not rewrite them, so tighten in place."""
    for proj in pipeline.projections.values():
        if proj.kind == "context_doc":
            tighten(pipeline.resolve(proj.path))


def run_projection(ctx, name: str) -> ProjectionResult:
    """Bring the projection up to date; when that changed it, its `on_update` hook is told."""
    proj = ctx.pipeline.projections[name]
    if proj.kind == "search_index":
        result = sync_search_index(ctx, name)
    else:
        result = write_context_doc(ctx, name)
    if result.changed:
        sent = projection_hooks.notify(ctx.pipeline, ctx.paths.branch, name, result.kind, result.detail)
        if sent is not None:
            result.detail["on_update"] = sent
    return result


def projection_stale(ctx, name: str) -> bool:
    """True when running the projection would change it."""
    proj = ctx.pipeline.projections[name]
    if proj.kind == "search_index":
        key, _ = _search_source(ctx, name)
        return ctx.store.get_meta(f"projection:{name}:key") != key or not ctx.paths.search.exists()
    path = ctx.paths.output_file(ctx.pipeline, proj.path)
    text, arts = render_context_doc(ctx, name)
    if not arts:  # a document is never drawn from nothing (write_context_doc)
        return False
    return ctx.store.get_meta(f"projection:{name}:key") != _context_key(ctx.pipeline, path, text) or \
        not path.exists()


def output_path(ctx, name: str):
    """The file a projection writes on the context's branch."""
    proj = ctx.pipeline.projections[name]
    return ctx.paths.search if proj.kind == "search_index" else ctx.paths.output_file(ctx.pipeline, proj.path)


def outputs_exist(ctx) -> bool:
    """Every projection's file is there (a deleted search.db or context.md must be rebuilt),
    but a context document whose layer holds nothing, which is never written."""
    return all(output_path(ctx, name).exists() or _drawn_from_nothing(ctx, name)
               for name in ctx.pipeline.projections)


def _drawn_from_nothing(ctx, name: str) -> bool:
    proj = ctx.pipeline.projections[name]
    return proj.kind == "context_doc" and ctx.store.current_count(proj.from_) == 0
