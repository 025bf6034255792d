"""Browsing a built memory: the layers and the pipeline DAG, one record, its sources and
transcripts, its provenance tree, a page of a layer and the timeline."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from synix_assets.app.memory.params import CHECKS, FILTERS, BadRequest, check_limit, record_summary
from synix_assets.app.query import artifact_dict, focus_tree, source_of, tree_of
from synix_assets.engine.projections import artifact_title, transcript_messages
from synix_resources.errors import ArtifactNotFound
from synix_resources.names import check_layer
from synix_resources.search.filters import check_date, just_before

if TYPE_CHECKING:
    from synix_assets.app.memory.service import MemoryService


def layers(svc: MemoryService, branch: str) -> list[dict]:
    """Layers in pipeline order with level, kind, inputs and how many records each holds."""
    pipe = svc.pipeline
    with svc.reader(branch) as r:
        stored = r.layers()
    out = []
    for name in pipe.layer_order():
        step = pipe.steps[name]
        out.append({"layer": name, "kind": step.kind, "level": pipe.level(name),
                    "from": [f for f in step.from_], "records": stored.get(name, {}).get("artifacts", 0),
                    "last_built": stored.get(name, {}).get("last_built")})
    return out


def pipeline_graph(pipe, status: dict) -> dict:
    """The DAG of `pipe`: sources, steps and projections as nodes (counts, staleness from
    `status`), edges by input."""
    nodes = [{"id": name, "kind": "source", "records": None, "stale": None}
             for name in pipe.sources]
    for name in pipe.layer_order():
        info = status["layers"].get(name, {})
        nodes.append({"id": name, "kind": pipe.steps[name].kind, "level": pipe.level(name),
                      "records": info.get("artifacts", 0), "stale": info.get("stale", 0),
                      "failed": info.get("failed", 0), "last_built": info.get("last_built")})
    for name, proj in pipe.projections.items():
        info = status["projections"].get(name, {}) if isinstance(status["projections"], dict) else {}
        nodes.append({"id": name, "kind": proj.kind, "records": None,
                      "stale": info.get("stale") if isinstance(info, dict) else None})
    edges = [{"from": up, "to": name} for name in pipe.layer_order() for up in pipe.steps[name].from_]
    for name, proj in pipe.projections.items():
        ups = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
        edges += [{"from": up, "to": name} for up in ups]
    return {"pipeline": pipe.name, "nodes": nodes, "edges": edges,
            "last_run": status.get("last_run")}


def record(svc: MemoryService, ref: str, branch: str) -> dict:
    """Content, metadata, audit, parents and source conversations of one record."""
    with svc.reader(branch) as r:
        out = artifact_dict(r.store, ref)
    out["messages"] = list(transcript_messages(out["content"])) if not out["parents"] else []
    return out


def matched_range(query: str, messages: list[dict]) -> tuple[int, int] | None:
    """The message of a transcript that contains the most of the query's words (to
    highlight and scroll to), as a (first, last) range; None when none does."""
    words = {w for w in re.findall(r"\w{3,}", query.casefold())}
    best, best_score = None, 0
    for msg in messages:
        score = len(words & set(re.findall(r"\w{3,}", msg["text"].casefold())))
        if score > best_score:
            best, best_score = msg["index"], score
    return (best, best) if best is not None else None


def sources(svc: MemoryService, ref: str, branch: str) -> dict:
    """The records this one was built from (one hop down), in input order."""
    with svc.reader(branch) as r:
        art = r.store.get(ref)
        parents = r.store.parents(art.artifact_id)
    return {"artifact_id": art.artifact_id, "layer": art.layer, "title": artifact_title(art),
            "sources": [record_summary(p) for p in parents]}


def leaves(svc: MemoryService, ref: str, branch: str, limit: int) -> dict:
    """The source transcripts (conversations) under a record."""
    check_limit(limit)
    with svc.reader(branch) as r:
        art = r.store.get(ref)
        found = r.store.leaves(art.artifact_id, max_count=limit)
    return {"artifact_id": art.artifact_id,
            "leaves": [{**source_of(l), "artifact_id": l.artifact_id} for l in found]}


def lineage(svc: MemoryService, ref: str, branch: str, query: str | None, *,
            depth: int, per_node: int | None) -> dict:
    """The provenance tree down to the transcripts, at most `depth` levels of sources; with
    `query` only the 2 branches per node that mention it most, with `per_node` at most that
    many (a core memory's full tree is every conversation). `hidden` counts what was cut."""
    if not 1 <= depth <= 20:
        raise BadRequest(f"depth must be between 1 and 20, got {depth}")
    if per_node is not None:
        check_limit(per_node, "per_node")
    with svc.reader(branch) as r:
        tree = tree_of(r.store.lineage(r.store.get(ref).artifact_id, max_depth=depth))
    if query or per_node:
        return focus_tree(tree, query or "", per_node=per_node or 2)
    return tree


def layer_page(svc: MemoryService, layer: str, *, branch: str, page: int, per_page: int,
               oldest_first: bool, since: str | None, until: str | None,
               filters: dict[str, str | None]) -> dict:
    """One page of a layer's current records, newest first, with optional filters."""
    check_layer(layer)
    check_limit(per_page, "per_page")
    if page < 1:
        raise BadRequest(f"page must be 1 or more, got {page}")
    meta = {}
    for name, value in filters.items():
        if name not in FILTERS:
            raise BadRequest(f"unknown filter {name!r} — use one of {', '.join(FILTERS)}")
        value = CHECKS[name](value, name) if name in CHECKS else value
        if value:
            meta[FILTERS[name]] = value
    with svc.reader(branch) as r:
        known = r.layers()
        if layer not in known:
            raise ArtifactNotFound(f"no layer {layer!r} in {svc.paths.root}",
                                   hint=f"layers: {', '.join(sorted(known)) or 'none built yet'}")
        total, arts = r.page([layer], offset=(page - 1) * per_page, limit=per_page,
                             newest_first=not oldest_first,
                             since=check_date(since, "since"), until=check_date(until, "until"),
                             meta=meta)
    return {"layer": layer, "page": page, "per_page": per_page, "total": total,
            "pages": max(1, -(-total // per_page)), "records": [record_summary(a) for a in arts]}


def timeline(svc: MemoryService, *, branch: str, since: str | None, until: str | None,
             source: str | None, layers: list[str] | None, limit: int, page: int,
             before: str | None = None) -> dict:
    """Records dated in [since, until] — or [since, before) — (default: the source
    transcripts), oldest first, grouped by where they came from (the export source)."""
    check_limit(limit)
    if before is not None:
        if until is not None:
            raise BadRequest("give until (inclusive) or before (exclusive), not both")
        until = just_before(before)
    with svc.reader(branch) as r:
        known = r.layers()
        chosen = layers or [l["layer"] for l in leaf_layers(svc.pipeline, known)]
        unknown = [l for l in chosen if l not in known]
        if unknown:
            raise ArtifactNotFound(f"no layer {unknown[0]!r} in {svc.paths.root}",
                                   hint=f"layers: {', '.join(sorted(known))}")
        total, arts = r.page(chosen, offset=(page - 1) * limit, limit=limit,
                             newest_first=False, since=check_date(since, "since"),
                             until=check_date(until, "until"),
                             meta={"meta.source.name": source} if source else None)
    by_source: dict[str, list[dict]] = {}
    for art in arts:
        key = art.metadata.get("meta.source.name") or art.layer
        by_source.setdefault(key, []).append(record_summary(art))
    window = {"before": before} if before is not None else {"until": until}
    return {"since": since, **window, "source": source, "layers": chosen, "total": total,
            "page": page, "by_source": by_source}


def leaf_layers(pipe, known: dict) -> list[dict]:
    """The built layers of level 0 (the source transcripts), in pipeline order."""
    return [{"layer": n} for n in pipe.layer_order() if pipe.level(n) == 0 and n in known]
