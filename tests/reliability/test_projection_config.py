"""A change to a projection alone (the layers a search index reads, embeddings on/off, the context
document's budget or path) is applied by a plain `synix run`, and `plan` agrees before and after."""
from __future__ import annotations

import pytest

from synix_assets.app.plan import make_plan
from synix_assets.app.run import run_build
from synix_resources.search.index import SearchIndex

INDEX_LINE = 'pipeline.search_index("memory-index", from_=["episodes", "monthly", "core"])'
DEFAULT_CONTEXT = 'pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)'
# From the episodes: with the fake provider a single core is too short for any budget to cut.
CONTEXT_LINE = 'pipeline.context_doc("context", from_="episodes", path="context.md", budget_tokens=4000)'


def _edit(paths, old: str, new: str) -> None:
    path = paths.root / "pipeline.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _projection_stale(paths, name: str) -> bool:
    return make_plan(paths).projections[name]["stale"]


def _index_stats(paths) -> dict:
    index = SearchIndex(paths.search, embeddings=False)
    try:
        return index.stats()
    finally:
        index.close()


def _apply(paths, name: str):
    """plan says the projection will update, the run updates it, then plan says it is done."""
    assert _projection_stale(paths, name)
    report = run_build(paths)
    assert not report.noop
    assert report.projections[name]["changed"]
    assert all(v["built"] == 0 for v in report.layers.values())  # no layer rebuilt for it
    assert not _projection_stale(paths, name)
    assert run_build(paths).noop
    return report


@pytest.fixture
def built(small_project):
    paths = small_project(8)
    _edit(paths, DEFAULT_CONTEXT, CONTEXT_LINE)
    run_build(paths)
    assert run_build(paths).noop
    return paths


def test_search_index_layers_change_is_applied_by_run(built):
    paths = built
    layers = _index_stats(paths)["layers"]
    assert {l for l, v in layers.items() if v["searchable"]} == {"episodes", "monthly", "core"}
    _edit(paths, INDEX_LINE, 'pipeline.search_index("memory-index", from_=["episodes"])')
    _apply(paths, "memory-index")
    layers = _index_stats(paths)["layers"]
    assert {l for l, v in layers.items() if v["searchable"]} == {"episodes"}
    # the others stay in the index, found only by a search that names them (§4.6)
    assert set(layers) == {"transcripts", "episodes", "monthly", "core"}


def test_switching_embeddings_on_and_off_is_applied_by_run(built):
    paths = built
    assert _index_stats(paths)["vectors"] == 0
    _edit(paths, INDEX_LINE, INDEX_LINE.replace("])", "], embeddings=True)"))
    _apply(paths, "memory-index")
    stats = _index_stats(paths)
    assert stats["vectors"] > 0
    index = SearchIndex(paths.search)
    try:
        results = index.search("topic1", mode="semantic", limit=3)
        assert results.mode == "semantic" and results.notice is None
    finally:
        index.close()
    _edit(paths, INDEX_LINE.replace("])", "], embeddings=True)"), INDEX_LINE)
    _apply(paths, "memory-index")
    assert _index_stats(paths)["vectors"] == 0
    assert _index_stats(paths)["docs"] == stats["docs"]


def test_context_budget_and_path_changes_are_applied_by_run(built):
    paths = built
    before = (paths.root / "context.md").read_text()
    assert "truncated to fit the budget" not in before
    _edit(paths, CONTEXT_LINE, CONTEXT_LINE.replace("budget_tokens=4000", "budget_tokens=100"))
    _apply(paths, "context")
    after = (paths.root / "context.md").read_text()
    assert "truncated to fit the budget" in after and len(after) < len(before)
    _edit(paths, CONTEXT_LINE.replace("budget_tokens=4000", "budget_tokens=100"),
          CONTEXT_LINE.replace('path="context.md"', 'path="memory/agent.md"'))
    _apply(paths, "context")
    assert (paths.root / "memory" / "agent.md").read_text() == before  # budget 4000 again
    # moving it back rewrites the old file, which held the 100-token version
    _edit(paths, CONTEXT_LINE.replace('path="context.md"', 'path="memory/agent.md"'), CONTEXT_LINE)
    _apply(paths, "context")
    assert "truncated to fit the budget" not in (paths.root / "context.md").read_text()


def test_deleted_context_doc_is_restored_by_run_not_a_noop(built):
    paths = built
    (paths.root / "context.md").unlink()
    _apply(paths, "context")
    assert (paths.root / "context.md").exists()
