"""Documents for agents: the context document, the memory map an agent reads first and the
prompt-ready brief within a token budget."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from synix_assets.app.memory import as_of as _as_of
from synix_assets.app.memory.params import BadRequest, check_limit, record_summary
from synix_assets.app.query import NOT_BUILT_HINT
from synix_assets.app.synapse import SYNAPSE_KINDS
from synix_assets.engine.agent import MAP_GROUP as AGENT_MAP
from synix_resources.errors import ArtifactNotFound
from synix_resources.llm.mapreduce import estimate_tokens

if TYPE_CHECKING:
    from synix_assets.app.memory.service import MemoryService

_CONTEXT_IDS = re.compile(r"\b([a-z0-9_-]+-[0-9a-f]{16})\b")


def context(svc: MemoryService) -> dict:
    """The context document as written by the last build, and the records its footer names."""
    pipe = svc.pipeline
    docs = [p for p in pipe.projections.values() if p.kind == "context_doc"]
    if not docs:
        raise ArtifactNotFound("this pipeline declares no context_doc projection",
                               hint="add pipeline.context_doc(...) and run `synix run`")
    path = pipe.resolve(docs[0].path)
    if not path.is_file():
        raise ArtifactNotFound(f"no context document at {path} yet", hint=NOT_BUILT_HINT)
    text = path.read_text(encoding="utf-8")
    body, _, footer = text.partition("\n---\n")
    ids = list(dict.fromkeys(_CONTEXT_IDS.findall(footer)))
    return {"path": str(path), "name": docs[0].name, "text": text, "body": body,
            "footer": footer, "records": ids, "tokens": estimate_tokens(text)}


def memory_map(svc: MemoryService, branch: str, recent: int, until: str | None = None) -> dict:
    """The navigational map an agent reads first: the top layer (core memory), the layers
    with their sizes, and the most recent records of the layers below it. `until` (an instant):
    only records built from sources all dated up to then, a fold's checkpoint of then in place of
    a later state (app/memory/as_of.py). The Synapse layers (rolling summary, loops, identity)
    are Tier 1's, not recent records."""
    check_limit(recent, "recent")
    layers = svc.layers(branch)
    built = [l for l in layers if l["records"]]
    if not built:
        raise ArtifactNotFound(f"nothing has been built in {svc.paths.root} yet", hint=NOT_BUILT_HINT)
    # Tier 1's layers and the facts (Tier 2) are read by their own sections, not as recent records
    tier1 = {n for n, st in svc.pipeline.steps.items() if st.kind in (*SYNAPSE_KINDS, "facts")}
    top = max(l["level"] for l in built if l["layer"] not in tier1) if set(l["layer"] for l in built) - tier1 else 0
    with svc.reader(branch) as r:
        core = []
        for l in built:
            if l["level"] == top and l["layer"] not in tier1:
                found = [record_summary(a) | {"content": a.content}
                         for a in _as_of.records(r, l["layer"], 3, until)]
                if until and not found and svc.pipeline.steps[l["layer"]].kind == "fold":
                    found = [cp for a in r.page([l["layer"]], limit=3)[1]
                             if (cp := _as_of.fold_checkpoint(r, a, until)) is not None]
                core += found
        recent_by_layer = {}
        for l in built:
            if 0 < l["level"] < top and l["layer"] not in tier1:
                recent_by_layer[l["layer"]] = [record_summary(a) for a in
                                               _as_of.records(r, l["layer"], recent, until)]
        # the map an agent step wrote (Syke's memex), read first by whoever navigates
        maps = [a for a in (r.store.current(l["layer"], AGENT_MAP) for l in built) if a is not None]
    out = {"core": core, "layers": layers, "recent": recent_by_layer}
    if maps:
        out["map"] = {"content": maps[0].content, "record_id": maps[0].artifact_id,
                      "layer": maps[0].layer, **{k.split(".")[-1]: v for k, v in maps[0].metadata.items()
                                                 if k.startswith("meta.custom.")}}
    return out


def brief(svc: MemoryService, query: str | None, *, branch: str, budget_tokens: int, hits: int,
          recent: int, as_of: str | None = None, reserved: int = 0) -> dict:
    """What an orchestrator puts in an agent's prompt, within `budget_tokens`: the core
    memory, the most recent periods/episodes, and the top hits for the query with their
    provenance. Sections are added in that order until the budget is spent. `as_of` (an
    instant): only records built from sources all dated up to then (see `memory_map`), and the
    hits search finds as of then that are too. `reserved`: tokens of the budget already taken
    (Tier 1), counted in the brief's `tokens`."""
    if not 100 <= budget_tokens <= 200_000:
        raise BadRequest(f"budget_tokens must be between 100 and 200000, got {budget_tokens}")
    check_limit(hits, "hits")
    m = memory_map(svc, branch, recent, until=as_of)
    sections: list[dict] = []
    used = reserved

    def add(kind: str, title: str, text: str, ref: dict) -> bool:
        nonlocal used
        cost = estimate_tokens(title) + estimate_tokens(text) + 8
        if used + cost > budget_tokens:
            room = (budget_tokens - used - estimate_tokens(title) - 9) * 4  # one token for the "…"
            if room < 200:
                return False
            text = text[:room].rstrip() + "…"
            cost = estimate_tokens(title) + estimate_tokens(text) + 8
        sections.append({"kind": kind, "title": title, "text": text, **ref})
        used += cost
        return True

    for item in m["core"]:
        if "position" in item:  # a fold's checkpoint: no record of its own, its sources cited
            add("core", f"{item['layer']} as of {as_of} (its state after {item['position']} of "
                        f"{item['of']} inputs)", item["content"],
                {"artifact_id": None, "checkpoint": {"position": item["position"], "of": item["of"]},
                 "sources": item["sources"]})
        else:
            add("core", item["title"], item["content"], {"artifact_id": item["artifact_id"]})
    for layer, items in sorted(m["recent"].items(), key=lambda kv: -_level(m, kv[0])):
        for item in items:
            add("recent", f"{item['title']} ({item['date'] or item['period'] or ''})".strip(),
                item["preview"], {"artifact_id": item["artifact_id"], "layer": layer})
    found = None
    if query and query.strip():
        found = (_as_of.search(svc, query, branch=branch, limit=hits, instant=as_of) if as_of
                 else svc.search(query, branch=branch, limit=hits))
        for hit in found["hits"]:
            add("hit", hit["title"] or hit["artifact_id"], hit["snippet"],
                {"artifact_id": hit["artifact_id"], "layer": hit["layer"], "score": hit["score"],
                 "sources": hit["sources"]})
    text = "\n\n".join(f"## {s['title']} [{s['artifact_id'] or _span(s['sources'])}]\n{s['text']}"
                       for s in sections)
    return {"query": query, "budget_tokens": budget_tokens, "tokens": used, **({"as_of": as_of} if as_of else {}),
            "sections": sections, "text": text,
            **({"notice": found["notice"]} if found and "notice" in found else {})}


def _span(ids: list[str]) -> str:
    """A checkpoint's sources in its heading: all of a few, else the first and the last."""
    return ", ".join(ids) if len(ids) <= 3 else f"{ids[0]} … {ids[-1]}"


def _level(m: dict, layer: str) -> int:
    return next((l["level"] for l in m["layers"] if l["layer"] == layer), 0)
