"""The explorer: server-rendered pages (Jinja2, autoescaped) with htmx for in-place navigation.

Its parameters are named by `app/vocabulary.py` like every door's (`query`, `step`, `as_of`,
`branch`, …); `params.py` renames the older spellings (`?q=`, `?layers=`, old bookmarks) and
answers a name a page does not take with an HTML 400 naming what it accepts. The links and
forms the pages make use the design names only.

Handlers only gather what `MemoryService` returns and hand it to a template; every piece of
export text is escaped by Jinja, and highlighting escapes before it marks.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from synix_assets.app.memory import MAX_LIMIT
from synix_assets.serve.api import memory_for, split_steps

HERE = Path(__file__).parent
router = APIRouter(include_in_schema=False)
env = Environment(loader=FileSystemLoader(HERE / "templates"),
                  autoescape=select_autoescape(default=True, default_for_string=True))
_SNIPPET_MARK = re.compile(r"\[([^\[\]\n]{1,80})\]")


def highlight(text: str, query: str | None) -> Markup:
    """Escaped text with the query's words wrapped in <mark>."""
    safe = str(escape(text or ""))
    words = sorted({w for w in re.findall(r"\w{3,}", query or "")}, key=len, reverse=True)
    if words:
        pattern = re.compile(r"\b(" + "|".join(re.escape(str(escape(w))) for w in words) + r")",
                             re.IGNORECASE)
        safe = pattern.sub(r"<mark>\1</mark>", safe)
    return Markup(safe)


def snippet(text: str) -> Markup:
    """A search snippet, escaped, with the index's [match] brackets shown as <mark>."""
    return Markup(_SNIPPET_MARK.sub(r"<mark>\1</mark>", str(escape(text or ""))))


def link(path: str, **params) -> str:
    """A URL with the non-empty params."""
    kept = {k: v for k, v in params.items() if v not in (None, "", [], False)}
    return path + (("?" + urlencode(kept, doseq=True)) if kept else "")


env.filters["highlight"] = highlight
env.filters["snippet"] = snippet
env.globals["link"] = link


BRANCH_COOKIE = "synix_branch"
DIFF_RECORDS = 50  # changed records shown side by side per layer


def render(request: Request, name: str, status: int = 200, **ctx) -> HTMLResponse:
    ctx.setdefault("branch", request.query_params.get("branch", "main"))
    branches = getattr(request.app.state, "branches", None)
    ctx.setdefault("branch_names", branches.names() if branches is not None else ["main"])
    return HTMLResponse(env.get_template(name).render(request=request, **ctx), status_code=status)


@router.get("/branch")
def switch_branch(request: Request, branch: str = "main") -> RedirectResponse:
    """Remember the chosen branch (a cookie the branch middleware applies to every page);
    `?name=` is its older spelling."""
    memory_for(request, branch)  # an unknown branch is a 404, not a sticky cookie
    response = RedirectResponse(link("/explore", branch=branch if branch != "main" else None),
                                status_code=303)
    response.set_cookie(BRANCH_COOKIE, branch, httponly=True, samesite="strict")
    return response


@router.get("/branches/diff", response_class=HTMLResponse)
def branch_diff(request: Request, branch: str = "main", base: str = "main"):
    """Changed steps, per-layer record counts and changed records side by side."""
    from synix_assets.app.branches import diff_branch

    memory_for(request, branch), memory_for(request, base)  # both must exist
    services = request.app.state.branches
    diff = diff_branch(services.main.paths, branch, base=base)
    shown = [c for layer in diff["layers"] for c in layer["changed"][:DIFF_RECORDS]]
    texts = services.main.texts([i for c in shown for i in (c["base"], c["branch"])])
    return render(request, "diff.html", diff=diff, texts=texts, shown=DIFF_RECORDS, branch=branch)


@router.get("/")
def home(request: Request) -> RedirectResponse:
    # The query string goes along: /explore checks its names (a bookmark of /?q= still opens).
    query = request.url.query
    return RedirectResponse("/explore" + (f"?{query}" if query else ""), status_code=307)


@router.get("/explore", response_class=HTMLResponse)
def explore(request: Request, query: str | None = None, step: list[str] | None = Query(None),
            mode: str = "fts", layer: str | None = None, page: int = Query(1, ge=1),
            sel: str | None = None, src: str | None = None, trail: str | None = None,
            range_: str | None = Query(None, alias="range"), branch: str = "main",
            as_of: str | None = None):
    """Three columns: results (search hits, or a layer's records) | the selected record's
    sources | the selected source's content. Clicking a source's own source moves the
    selection down one level (the trail keeps the way back). `as_of` (a date): search as of
    then (`MemoryService.search`: the records dated up to then, the agent memories held then);
    every link keeps it. `step`: the layers searched, repeated or comma-separated, as /v1/search."""
    as_of = as_of or None  # the form's empty date field
    svc = memory_for(request, branch)
    all_layers = svc.layers(branch)
    layer_list = split_steps(step)
    results, listing = None, None
    if query:
        # the conversations' own passages always listed under the hits ("In the conversations")
        results = svc.search(query, branch=branch, layers=layer_list, mode=mode, limit=30, as_of=as_of,
                             passages=True)
    else:
        built = [l for l in all_layers if l["records"]]
        chosen = layer or (max(built, key=lambda l: l["level"])["layer"] if built else None)
        if chosen:
            listing = svc.layer_page(chosen, branch=branch, page=page, per_page=30)
    selected = svc.record(sel, branch) if sel else None
    selected_sources = svc.sources(sel, branch)["sources"] if sel else []
    detail = svc.record(src, branch) if src else None
    detail_sources = svc.sources(src, branch)["sources"] if src else []
    hl_range = _range(range_)
    if detail and detail["messages"] and not hl_range and query:
        hl_range = svc.matched_range(query, detail["messages"])
    trail_ids = [t for t in (trail or "").split(",") if t]
    crumbs = [svc.sources(t, branch) for t in trail_ids]
    return render(request, "explore.html", query=query, step=",".join(layer_list or []),
                  mode=mode, layer=layer,
                  all_layers=all_layers, results=results, listing=listing, selected=selected,
                  selected_sources=selected_sources, detail=detail, detail_sources=detail_sources,
                  hl_range=hl_range, trail=trail_ids, crumbs=crumbs, sel=sel, src=src, page=page,
                  branch=branch, as_of=as_of)


def _range(value: str | None) -> tuple[int, int] | None:
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", value or "")
    return (int(m.group(1)), int(m.group(2) or m.group(1))) if m else None


@router.get("/records/{record_id}", response_class=HTMLResponse)
def record_page(request: Request, record_id: str, branch: str = "main"):
    svc = memory_for(request, branch)
    rec = svc.record(record_id, branch)
    # Two levels, a few sources each: a core memory's whole tree is every conversation.
    return render(request, "record.html", rec=rec,
                  tree=svc.lineage(record_id, branch, depth=2, per_node=8))


@router.get("/layers/{layer}", response_class=HTMLResponse)
def layer_page(request: Request, layer: str, page: int = Query(1, ge=1),
               per_page: int = Query(50, ge=1, le=MAX_LIMIT), oldest_first: bool = False,
               period: str | None = None, conversation: str | None = None,
               source_file: str | None = None, branch: str = "main"):
    svc = memory_for(request, branch)
    data = svc.layer_page(layer, branch=branch, page=page, per_page=per_page,
                          oldest_first=oldest_first, period=period, conversation=conversation,
                          source_file=source_file)
    return render(request, "layer.html", data=data, all_layers=svc.layers(branch),
                  period=period or "", conversation=conversation or "",
                  source_file=source_file or "", oldest_first=oldest_first)


@router.get("/pipeline", response_class=HTMLResponse)
def pipeline_page(request: Request, branch: str = "main"):
    """The page at once; the DAG (which needs a staleness plan) loads into it."""
    return render(request, "pipeline.html", branch=branch)


@router.get("/pipeline/graph", response_class=HTMLResponse)
def pipeline_graph(request: Request, branch: str = "main"):
    graph = memory_for(request, branch).pipeline_graph(branch)
    columns: dict[int, list[dict]] = {}
    for node in graph["nodes"]:
        col = -1 if node["kind"] == "source" else (node.get("level", 0) if "level" in node else 99)
        columns.setdefault(col, []).append(node)
    inputs = {}
    for edge in graph["edges"]:
        inputs.setdefault(edge["to"], []).append(edge["from"])
    return render(request, "_pipeline_graph.html", graph=graph,
                  columns=[columns[k] for k in sorted(columns)], inputs=inputs)


@router.get("/context", response_class=HTMLResponse)
def context_page(request: Request, branch: str = "main"):
    return render(request, "context.html", doc=memory_for(request, branch).context(branch))
