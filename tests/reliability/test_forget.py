"""`forget`: a conversation or an export file leaves no trace anywhere in the project folder
(artifacts, history, FTS, LLM cache, Dagster events, free pages, WAL), and what used it is rebuilt
without it."""
from __future__ import annotations

import shutil

import pytest

from synix_assets.app.run import run_build
from synix_assets.forget import forget
from synix_resources.errors import SynixError
from synix_resources.search.index import SearchIndex
from synix_resources.store.artifact_store import ArtifactStore

MARKER = "Zqxjarvelmonk"  # appears only in the forgotten conversation


@pytest.fixture
def built(small_project, claude_export, make_conversations):
    paths = small_project(4)
    # private.json: the conversation to forget and a neighbour that must survive, same month
    convs = make_conversations(2, prefix="private", months=("2025-01",), marker_at={0: MARKER})
    claude_export(paths.root / "exports" / "private.json", convs)
    report = run_build(paths)
    assert report.layers["episodes"]["built"] == 6
    return paths


def test_dry_run_lists_and_changes_nothing(built, files_containing):
    before = files_containing(built.root, MARKER)
    report = forget(built, "private-0", dry_run=True, rebuild=run_build)
    assert report.conversation_ids == ["private-0"]
    assert {a["layer"] for a in report.artifacts} == {"transcripts", "episodes", "monthly", "core"}
    assert report.files_rewritten == [str((built.root / "exports" / "private.json").resolve())]
    assert report.dagster_runs and report.rebuild is None
    # Opening Dagster's instance may checkpoint a WAL into its database: the same data, one file
    # over, so a database and its WAL count as one place.
    assert _databases(files_containing(built.root, MARKER)) == _databases(before)
    assert "exports/private.json" in before and ".synix/synix.db" in before


def _databases(files: list[str]) -> set[str]:
    return {f.removesuffix("-wal").removesuffix("-shm") for f in files}


def test_forget_conversation_leaves_no_trace_and_rebuilds_without_it(
        built, files_containing, integrity, consistency_problems):
    report = forget(built, "private-0", rebuild=run_build)
    assert report.rebuild_error is None
    layers = report.rebuild["layers"]
    assert (layers["monthly"]["built"], layers["core"]["built"]) == (1, 1)  # January, core
    assert layers["episodes"]["built"] == 0  # nothing else is re-summarised
    assert report.cache_entries_removed >= 3 and report.index_docs_removed >= 3
    assert files_containing(built.root, MARKER) == []
    store = ArtifactStore(built.store)
    try:
        assert len(store.current_index("episodes")) == len(store.current_index("transcripts")) == 5
        assert store.current("transcripts", "private-0") is None
        assert store.history("episodes", "private-0") == []
        assert store.current("episodes", "private-1") is not None  # its neighbour stays
        january = store.current("monthly", "2025-01")
        assert "private-0" not in {p.group_key for p in store.parents(january.artifact_id)}
    finally:
        store.close()
    index = SearchIndex(built.search, embeddings=False)
    try:
        assert index.search("zqxjarvelmonk", limit=5) == []
        assert index.search("topic1 private", limit=5)
    finally:
        index.close()
    assert set(integrity(built.root).values()) == {"ok"}
    assert consistency_problems(built.store) == []
    assert not any(f.name.endswith("-wal") and f.stat().st_size for f in built.state_dir.rglob("*"))


def test_forget_export_file_deletes_it_and_all_its_conversations(built, files_containing):
    report = forget(built, "exports/private.json", rebuild=run_build)
    assert report.conversation_ids == ["private-0", "private-1"]
    assert report.files_deleted == [str((built.root / "exports" / "private.json").resolve())]
    assert not (built.root / "exports" / "private.json").exists()
    assert files_containing(built.root, MARKER) == []
    store = ArtifactStore(built.store)
    try:
        assert sorted(store.current_index("episodes")) == [f"conv-{i}" for i in range(4)]
    finally:
        store.close()
    again = run_build(built)  # the next build finds nothing to do and nothing to resurrect
    assert again.to_json()["llm_calls"] == 0


def test_unknown_target_is_a_clean_error(built):
    with pytest.raises(SynixError, match="no conversation or export file"):
        forget(built, "no-such-conversation", rebuild=run_build)


def test_forgotten_conversation_is_not_reingested_from_a_recopied_export(built, tmp_path):
    original = tmp_path / "private-copy.json"
    shutil.copy2(built.root / "exports" / "private.json", original)
    forget(built, "private-0", rebuild=run_build)
    shutil.copy2(original, built.root / "exports" / "private-again.json")
    run_build(built)
    store = ArtifactStore(built.store)
    try:
        assert store.current("transcripts", "private-0") is None
    finally:
        store.close()


def test_fold_states_after_the_forgotten_month_leave_the_llm_cache(demo_project):
    """Forgetting a March conversation of the demo: the core fold's cached steps for March to
    June (states carrying March's rollup forward) go; January and February's stay valid."""
    import sqlite3

    def core_steps() -> dict[str, str]:
        with sqlite3.connect(str(demo_project.llm_cache)) as db:
            rows = dict(db.execute("SELECT key, label FROM responses WHERE label LIKE 'core/%'"))
        db.close()
        return rows

    run_build(demo_project)
    before = core_steps()
    assert sorted(before.values()) == [f"core/2025-0{m}" for m in range(1, 7)]
    report = forget(demo_project, "1dcd717d-bd5c-56dc-a504-8e02563fec81", rebuild=run_build)  # 2025-03
    assert report.rebuild_error is None
    after = core_steps()
    assert {before[k] for k in before if k in after} == {"core/2025-01", "core/2025-02"}
    assert report.cache_entries_removed >= 4 + 2  # four fold steps, the episode, March's rollup


def test_forgetting_an_export_file_also_takes_its_conversations_out_of_a_later_export(
        built, claude_export, make_conversations, files_containing):
    """Cumulative exports repeat old conversations: forgetting the old file must not leave them
    in the new one (and forget must not report success while they are there)."""
    later = make_conversations(2, prefix="private", months=("2025-01",), marker_at={0: MARKER})
    later += make_conversations(1, prefix="june", months=("2025-06",))
    claude_export(built.root / "exports" / "cumulative.json", later)
    run_build(built)
    report = forget(built, "exports/private.json", rebuild=run_build)
    assert report.conversation_ids == ["private-0", "private-1"]
    assert report.files_rewritten == [str(built.root / "exports" / "cumulative.json")]
    assert files_containing(built.root, MARKER) == []
    assert "june-0" in (built.root / "exports" / "cumulative.json").read_text()


def test_forget_reaches_a_built_branch_its_store_pointers_projections_and_dagster_partitions(
        built, files_containing):
    import dagster as dg

    from synix_assets.app import branches
    from synix_assets.dagster_defs.instance import dagster_instance

    branches.create_branch(built, "short")
    short = built.on_branch("short")
    short.pipeline_file.write_text(short.pipeline_file.read_text().replace(
        'prompt=prompts.episode_summary)', 'prompt=prompts.episode_summary, max_tokens=300)'))
    assert run_build(short).layers["episodes"]["built"] == 6
    instance = dagster_instance(built)
    with ArtifactStore(built.store) as store:
        name = store.partition_names()["private-0"]  # its readable partition key
    assert instance.has_dynamic_partition("short__conversations", name)
    assert any(".synix/branches/short" in f for f in files_containing(built.root, MARKER))
    report = forget(built, "private-0", rebuild=run_build)
    assert report.rebuild_error is None
    assert files_containing(built.root, MARKER) == []
    for key in (name, "private-0"):
        assert not instance.has_dynamic_partition("short__conversations", key)
        assert not instance.has_dynamic_partition("conversations", key)
    with ArtifactStore(built.store) as store:  # the name (a slug of its title) went with it
        assert "private-0" not in store.partition_names()
    store = ArtifactStore(built.store)
    try:
        assert ("transcripts", "private-0") not in store.on_branch("short").pointers()
        assert ("episodes", "private-1") in store.on_branch("short").pointers()
    finally:
        store.close()
    episodes = dg.AssetKey(["branches", "short", "episodes"])
    assert name not in instance.get_materialized_partitions(episodes)


def test_forget_does_not_warn_of_a_wipe_it_did_itself_and_dagster_still_shows_the_rest(built, caplog):
    import logging

    from synix_assets.dagster_defs.instance import dagster_instance

    caplog.set_level(logging.WARNING, logger="synix")
    report = forget(built, "private-0", rebuild=run_build)
    assert report.rebuild_error is None
    assert not [r for r in caplog.records if "no Dagster record" in r.getMessage()]
    with ArtifactStore(built.store) as store:
        names = store.partition_names()
    instance = dagster_instance(built)
    shown = instance.get_materialized_partitions(dg_key("episodes"))
    assert names["private-1"] in shown and len(shown) == 5  # the survivors, restored
    assert "2025-01" in instance.get_materialized_partitions(dg_key("monthly"))  # rebuilt


def dg_key(layer: str):
    import dagster as dg

    return dg.AssetKey([layer])
