"""`synix demo`: the whole story on the bundled exports, offline, in one call.

init → build → search → context.md → rebuild (nothing to do) → switch to topical rollups →
rebuild (only the new layers) → search again. `notify(step, data)` lets the CLI show each step
as it happens; the returned dict is the record of all of them.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from synix_assets.project import ProjectPaths

DEMO_QUERY = "marathon"


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
    chosen = os.environ.get("SYNIX_LLM_PROVIDER")
    if not chosen:
        os.environ["SYNIX_LLM_PROVIDER"] = "extractive"
    try:
        yield os.environ["SYNIX_LLM_PROVIDER"]
    finally:
        if not chosen:
            os.environ.pop("SYNIX_LLM_PROVIDER", None)


def rollup_layer(pipeline) -> str | None:
    """The level-2 layer (monthly or topics in the bundled templates)."""
    return next((l for l in pipeline.layer_order() if pipeline.level(l) == 2), None)


def run_demo(root: str | Path, *, query: str = DEMO_QUERY,
             notify: Callable[[str, dict], None] | None = None,
             progress: Callable[[str, str, dict], None] | None = None) -> dict:
    from synix_assets import scaffold
    from synix_assets.engine.runner import run_build
    from synix_assets.reports.query import search_view

    tell = notify or (lambda step, data: None)
    record: dict = {"root": None, "runs": [], "searches": []}

    def build(title: str) -> None:
        tell("run-start", {"title": title})
        report = run_build(paths, progress=progress)
        record["runs"].append({"title": title, **report.to_json()})
        tell("run", {"title": title, "report": report})

    def search(title: str) -> None:
        # Unscoped search keeps the highest-altitude hit of each lineage (often the core memory);
        # scoped to the rollup layer it shows how the architecture change regrouped the memory.
        result = search_view(paths, query, limit=5)
        rollup = rollup_layer(paths.load_pipeline())
        scoped = search_view(paths, query, layers=[rollup], limit=3) if rollup else None
        record["searches"].append({"title": title, **result, "rollup": scoped})
        tell("search", {"title": title, "result": result, "rollup_layer": rollup, "rollup": scoped})

    with offline_provider() as provider:
        root = scaffold.init_project(root, exports=scaffold.demo_exports())
        paths = ProjectPaths(root)
        record["root"] = str(root)
        tell("init", {"root": str(root), "exports": [p.name for p in scaffold.demo_exports()],
                      "provider": provider})
        build("First build: every layer from scratch")
        search(f'Search "{query}"')
        pipeline = paths.load_pipeline()
        doc = next(p for p in pipeline.projections.values() if p.kind == "context_doc")
        doc_path = pipeline.resolve(doc.path)
        record["context_doc"] = str(doc_path)
        tell("context", {"path": str(doc_path), "text": doc_path.read_text(encoding="utf-8")})
        build("Second build: nothing changed")
        scaffold.switch_template(root, "topical")
        tell("switch", {"template": "topical", "pipeline": str(paths.pipeline_file)})
        build("Third build: monthly rollups swapped for topical rollups")
        search(f'Search "{query}" again')
    return record
