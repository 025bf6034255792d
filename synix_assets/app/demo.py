"""`synix demo`: the whole story on the bundled exports, offline, in one call.

init → build → search → context.md → rebuild (nothing to do) → branch `topical` with topical
rollups → build the branch (transcripts and episodes shared at no cost) → search and context
document of main and the branch side by side → diff → promote (main now serves topical; its next
build is a no-op). `notify(step, data)` lets the CLI show each step
as it happens; the returned dict is the record of all of them.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from synix_assets.project import ProjectPaths
from synix_resources.settings import Settings, settings

DEMO_QUERY = "marathon"
PROVIDER_ENV = Settings.llm_provider.name


def fresh_dir(base: str | Path) -> Path:
    """`base`, or `base-2`, `base-3`… if a project already lives there (never overwrite one)."""
    base = Path(base).expanduser().resolve()
    candidate, n = base, 1
    while (candidate / "pipeline.py").exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


@contextmanager
def offline_provider():
    """The demo must not spend money: extractive unless the user chose a provider explicitly."""
    chosen = settings().llm_provider
    if not chosen:
        os.environ[PROVIDER_ENV] = "extractive"
    try:
        yield settings().llm_provider
    finally:
        if not chosen:
            os.environ.pop(PROVIDER_ENV, None)


def rollup_layer(pipeline) -> str | None:
    """The level-2 layer (monthly or topics in the bundled templates)."""
    return next((l for l in pipeline.layer_order() if pipeline.level(l) == 2), None)


def run_demo(root: str | Path, *, query: str = DEMO_QUERY,
             notify: Callable[[str, dict], None] | None = None,
             progress: Callable[[str, str, dict], None] | None = None) -> dict:
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.app.query import search_view
    from synix_assets.app.run import run_build

    tell = notify or (lambda step, data: None)
    record: dict = {"root": None, "runs": [], "searches": []}

    def build(title: str, on=None) -> None:
        where = on or paths
        tell("run-start", {"title": title, "branch": where.branch})
        report = run_build(where, progress=progress)
        record["runs"].append({"title": title, "branch": where.branch, **report.to_json()})
        tell("run", {"title": title, "report": report, "branch": where.branch})

    def search(title: str, on=None) -> dict:
        # Unscoped search keeps the highest-altitude hit of each lineage (often the core memory);
        # scoped to the rollup layer it shows how the architecture change regrouped the memory.
        where = on or paths
        result = search_view(where, query, limit=5)
        rollup = rollup_layer(where.load_pipeline())
        scoped = search_view(where, query, layers=[rollup], limit=3) if rollup else None
        record["searches"].append({"title": title, "branch": where.branch, **result, "rollup": scoped})
        data = {"title": title, "branch": where.branch, "result": result, "rollup_layer": rollup,
                "rollup": scoped}
        tell("search", data)
        return data

    with offline_provider() as provider:
        root = init_project(root, exports=demo_exports())
        paths = ProjectPaths(root)
        record["root"] = str(root)
        tell("init", {"root": str(root), "exports": [p.name for p in demo_exports()],
                      "provider": provider})
        build("First build: every layer from scratch")
        search(f'Search "{query}"')
        pipeline = paths.load_pipeline()
        doc = next(p for p in pipeline.projections.values() if p.kind == "context_doc")
        doc_path = pipeline.resolve(doc.path)
        record["context_doc"] = str(doc_path)
        tell("context", {"path": str(doc_path), "text": doc_path.read_text(encoding="utf-8")})
        build("Second build: nothing changed")
        branch_flow(paths, record, tell, build, search, query)
    return record


def _context_text(paths: ProjectPaths) -> str:
    pipeline = paths.load_pipeline()
    doc = next(p for p in pipeline.projections.values() if p.kind == "context_doc")
    return paths.output_file(pipeline, doc.path).read_text(encoding="utf-8")


def branch_flow(paths: ProjectPaths, record: dict, tell, build, search, query: str) -> None:
    """Try topical rollups on a branch beside main, compare, diff, promote."""
    from synix_assets.app.init import template_file
    from synix_assets.app import branches

    template = template_file("topical")
    created = branches.create_branch(paths, "topical", pipeline_file=template)
    topical = paths.on_branch("topical")
    tell("branch", {**created, "template": "topical", "from_file": str(template)})
    build("Build the branch: only topical rollups and core are new", on=topical)
    main_search = search(f'Search "{query}" on main', on=paths)
    branch_search = search(f'Search "{query}" on topical', on=topical)
    contexts = {"main": _context_text(paths), "topical": _context_text(topical)}
    record["compare"] = {"searches": [main_search["result"], branch_search["result"]],
                         "context": contexts}
    tell("compare", {"searches": {"main": main_search, "topical": branch_search}, "context": contexts})
    diff = branches.diff_branch(paths, "topical")
    record["diff"] = diff
    tell("diff", diff)
    promoted = branches.promote_branch(paths, "topical")
    record["promote"] = promoted
    tell("promote", promoted)
    build("Main after the promote: nothing to build")
