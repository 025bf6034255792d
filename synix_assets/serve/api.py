"""The HTTP JSON API under /v1: thin handlers over `MemoryService` (OpenAPI at /docs).

Parameter names are `app/vocabulary.py`'s (the older `q` and `layers` are renamed to `query`
and `step` by `params.py` before a handler runs; an unknown name is a 400 there)."""
from __future__ import annotations

from fastapi import APIRouter, Query, Request

from synix_assets.app.memory import MAX_LIMIT, MODES, MemoryService

router = APIRouter(prefix="/v1", tags=["memory"])
BRANCH = Query("main", description="Branch to read (default main; see `synix branch list`).")


def memory_for(request: Request, branch: str = "main") -> MemoryService:
    """The service reading `branch` for this request: the API and the explorer resolve every
    branch through the app's `BranchServices` (checked name, existing branch)."""
    return request.app.state.branches.get(branch)


def split_steps(values: list[str] | str | None) -> list[str] | None:
    """`step` as every door gives it: one name, a list (MCP, `?step=a&step=b`), or names
    comma-separated — the one place it is split (the explorer and the MCP tools use it too)."""
    if isinstance(values, str):
        values = [values]
    items = [v.strip() for value in values or () for v in value.split(",") if v.strip()]
    return list(dict.fromkeys(items)) or None


@router.get("/search", summary="Search the memory; every hit carries its provenance")
def search(request: Request, query: str = Query(..., description="Words to search for (older spelling: q)."),
           step: list[str] | None = Query(None, description="A layer to search, repeatable or comma-separated (default: all, best altitude per lineage; older spelling: layers)."),
           mode: str = Query("fts", description=f"One of {', '.join(MODES)}."),
           since: str | None = Query(None, description="Documents dated on or after: YYYY[-MM[-DD]] or an ISO date-time."),
           until: str | None = Query(None, description="Documents dated on or before: YYYY[-MM[-DD]] or an ISO date-time."),
           period: str | None = Query(None, description="The document's period: YYYY-MM, YYYY-Www or YYYY-Qn."),
           conversation: str | None = Query(None, description="Documents built from this conversation id."),
           limit: int = Query(10, ge=1, le=MAX_LIMIT),
           evidence: bool = Query(False, description="Search the raw transcripts (passages)."),
           as_of: str | None = Query(None, description="ISO date/time: the memories held then, the records dated up to then."),
           branch: str = BRANCH) -> dict:
    return memory_for(request, branch).search(query, branch=branch, layers=split_steps(step), mode=mode,
                                              since=since, until=until, limit=limit, evidence=evidence,
                                              period=period, conversation=conversation, as_of=as_of)


@router.get("/records/{record_id}", summary="One record: content, metadata, audit, sources")
def record(request: Request, record_id: str, branch: str = BRANCH,
           as_of: str | None = Query(None, description="ISO date/time: the version current then.")) -> dict:
    return memory_for(request, branch).record(record_id, branch, as_of=as_of)


@router.get("/records/{record_id}/sources", summary="The records this one was built from")
def sources(request: Request, record_id: str, branch: str = BRANCH) -> dict:
    return memory_for(request, branch).sources(record_id, branch)


@router.get("/records/{record_id}/leaves", summary="The source transcripts under a record")
def leaves(request: Request, record_id: str, limit: int = Query(100, ge=1, le=MAX_LIMIT),
           branch: str = BRANCH) -> dict:
    return memory_for(request, branch).leaves(record_id, branch, limit=limit)


@router.get("/records/{record_id}/lineage", summary="The provenance tree down to the transcripts")
def lineage(request: Request, record_id: str,
            query: str | None = Query(None, description="Keep the branches that mention these words (older spelling: q)."),
            depth: int = Query(20, ge=1, le=20, description="Levels of sources to follow."),
            per_node: int | None = Query(None, ge=1, le=MAX_LIMIT, description="Most sources shown per record."),
            branch: str = BRANCH) -> dict:
    return memory_for(request, branch).lineage(record_id, branch, query=query, depth=depth,
                                               per_node=per_node)


@router.get("/layers", summary="The pipeline's layers with their record counts")
def layers(request: Request, branch: str = BRANCH) -> dict:
    return {"layers": memory_for(request, branch).layers(branch)}


@router.get("/layers/{layer}", summary="One page of a layer's records, newest first")
def layer(request: Request, layer: str, page: int = Query(1, ge=1),
          per_page: int = Query(50, ge=1, le=MAX_LIMIT), oldest_first: bool = False,
          since: str | None = None, until: str | None = None,
          period: str | None = None, conversation: str | None = None,
          source: str | None = None, source_file: str | None = None,
          branch: str = BRANCH) -> dict:
    return memory_for(request, branch).layer_page(layer, branch=branch, page=page, per_page=per_page,
                                                  oldest_first=oldest_first, since=since, until=until,
                                                  period=period, conversation=conversation,
                                                  source=source, source_file=source_file)


@router.get("/timeline", summary="browse_timeline: records in a time window, grouped by source")
def timeline(request: Request, since: str | None = None,
             before: str | None = Query(None, description="Dated strictly before (design 003)."),
             until: str | None = Query(None, description="Dated on or before (inclusive)."),
             source: str | None = None, step: list[str] | None = Query(None),
             limit: int = Query(50, ge=1, le=MAX_LIMIT), page: int = Query(1, ge=1),
             branch: str = BRANCH) -> dict:
    return memory_for(request, branch).timeline(branch=branch, since=since, before=before, until=until,
                                                source=source, layers=split_steps(step), limit=limit, page=page)


@router.get("/context", summary="The context document and the records it was drawn from")
def context(request: Request, branch: str = BRANCH) -> dict:
    return memory_for(request, branch).context(branch)


@router.get("/brief", summary="Core memory + recent records + top hits, within a token budget")
def brief(request: Request, query: str | None = Query(None, description="Words for the top hits (older spelling: q)."),
          budget_tokens: int = Query(2000, ge=100, le=200_000),
          hits: int = Query(5, ge=1, le=MAX_LIMIT), branch: str = BRANCH,
          as_of: str | None = Query(None, description="ISO date/time: what the memory held then (records built from sources all dated up to then, Tier 1 as it stood)."),
          session: str | None = Query(None, description="Tier 1's session (synapse); default the latest.")) -> dict:
    return memory_for(request, branch).brief(query, branch=branch, budget_tokens=budget_tokens,
                                             hits=hits, as_of=as_of, session=session)


@router.get("/map", summary="get_memex: the map an agent reads first: core memory, layers, recent records")
def memory_map(request: Request, recent: int = Query(5, ge=1, le=MAX_LIMIT),
               branch: str = BRANCH) -> dict:
    return memory_for(request, branch).memory_map(branch, recent=recent)


@router.get("/pipeline", summary="The pipeline DAG with counts and staleness")
def pipeline(request: Request, branch: str = BRANCH) -> dict:
    return memory_for(request, branch).pipeline_graph(branch)
