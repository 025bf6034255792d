"""Branches in the artifact store: pointers over shared artifacts, promote, undo, gc (contract tests:
every backend)."""
from __future__ import annotations

import pytest

from synix_resources import fingerprints
from synix_resources.errors import BranchError
from synix_resources.store.artifact_store import ArtifactStore


def put(store, layer, group, key="k", parents=(), content=None):
    return store.put(layer=layer, group_key=group, materialization_key=key, parents=parents,
                     content=content if content is not None else f"{layer}:{group}:{key}")


def build_main(store):
    t0, t1 = put(store, "transcripts", "c0"), put(store, "transcripts", "c1")
    e0 = put(store, "episodes", "c0", parents=[t0.artifact_id])
    e1 = put(store, "episodes", "c1", parents=[t1.artifact_id])
    m = put(store, "monthly", "2024-01", parents=[e0.artifact_id, e1.artifact_id])
    return t0, t1, e0, e1, m


def count_artifacts(store):
    """Every stored artifact, current or not (main's summary counts both)."""
    return sum(s["artifacts"] + s["superseded"] for s in store.layers().values())


def test_creating_a_branch_copies_pointers_not_artifacts(store):
    build_main(store)
    before = count_artifacts(store)
    store.create_branch("topical")
    branch = store.on_branch("topical")
    assert count_artifacts(store) == before
    assert branch.pointers() == store.pointers()
    assert set(branch.current_index("episodes")) == {"c0", "c1"}


def test_a_branch_build_never_moves_mains_pointers(store):
    _, _, e0, _, m = build_main(store)
    store.create_branch("b")
    branch = store.on_branch("b")
    new_e0 = branch.put(layer="episodes", group_key="c0", materialization_key="k2",
                        content="better summary", parents=list(e0.parent_ids))
    assert branch.current("episodes", "c0").artifact_id == new_e0.artifact_id
    assert branch.current("episodes", "c0").is_current
    assert store.current("episodes", "c0").artifact_id == e0.artifact_id
    assert store.get(new_e0.artifact_id).is_current is False  # seen from main
    branch.retire("monthly", ["2024-01"])
    assert branch.current("monthly", "2024-01") is None
    assert store.current("monthly", "2024-01").artifact_id == m.artifact_id
    assert [a.group_key for a in branch.list_layer("episodes")] == ["c0", "c1"]
    assert branch.layers()["episodes"]["artifacts"] == 2


def test_adopt_reuses_an_artifact_any_branch_built(store):
    t0, *_ = build_main(store)
    store.create_branch("a")
    store.create_branch("b")
    a, b = store.on_branch("a"), store.on_branch("b")
    built = a.put(layer="topics", group_key="running", materialization_key="tk",
                  content="topic text", parents=[t0.artifact_id])
    assert b.adopt("topics", "nothing", "tk") is None
    reused = b.adopt("topics", "running", "tk")
    assert reused.artifact_id == built.artifact_id and reused.is_current
    assert b.current("topics", "running").content == "topic text"
    assert store.current("topics", "running") is None  # main untouched
    # on main, adopting an old version makes it current again without rewriting it
    old = put(store, "episodes", "c0", key="k-old", parents=[t0.artifact_id])
    put(store, "episodes", "c0", key="k-new", parents=[t0.artifact_id])
    assert store.adopt("episodes", "c0", "k-old").artifact_id == old.artifact_id
    assert store.current("episodes", "c0").artifact_id == old.artifact_id


def test_meta_failures_and_runs_are_per_branch(store):
    store.set_meta("build:fingerprint", "main-fp")
    store.set_meta("ingest:file:x", "shared")
    store.create_branch("b")
    b = store.on_branch("b")
    assert b.get_meta("build:fingerprint") is None  # a new branch is not built yet
    b.set_meta("build:fingerprint", "b-fp")
    assert store.get_meta("build:fingerprint") == "main-fp"
    assert b.get_meta("ingest:file:x") == "shared"
    b.record_failure("r1", "episodes", "c0", "boom")
    assert store.failures() == [] and [f.group_key for f in b.failures()] == ["c0"]
    b.start_run("p", ["episodes"], run_id="run-b")
    store.start_run("p", ["episodes"], run_id="run-main")
    assert [r.run_id for r in b.list_runs()] == ["run-b"]
    assert [r.run_id for r in store.list_runs()] == ["run-main"]
    assert store.get_run("run-b").branch == "b"


def test_deleting_a_branch_keeps_the_meta_of_branches_its_name_matches_as_a_like_pattern(store):
    for name in ("a_b", "a-b", "aXb", "A_B"):
        store.create_branch(name)
        store.on_branch(name).set_meta("build:fingerprint", f"{name}-fp")
    store.delete_branch("a_b")
    assert {n: store.on_branch(n).get_meta("build:fingerprint") for n in ("a-b", "aXb", "A_B")} == \
        {"a-b": "a-b-fp", "aXb": "aXb-fp", "A_B": "A_B-fp"}
    store.create_branch("a_b")
    assert store.on_branch("a_b").get_meta("build:fingerprint") is None


def test_promote_moves_main_to_the_branch_and_can_be_undone(store):
    t0, t1, e0, e1, m = build_main(store)
    store.set_meta("layer:version:episodes", "v1")
    store.create_branch("topical")
    br = store.on_branch("topical")
    br.retire("monthly", ["2024-01"])
    topic = br.put(layer="topics", group_key="running", materialization_key="tk",
                   content="topics", parents=[e0.artifact_id])
    br.set_meta("layer:version:topics", "tv")
    main_before = store.pointers()
    store.promote("topical")
    assert store.pointers() == br.pointers()
    assert store.current("monthly", "2024-01") is None
    assert store.current("topics", "running").artifact_id == topic.artifact_id
    assert store.get_meta("layer:version:topics") == "tv"
    assert store.on_branch("main@previous").pointers() == main_before
    store.promote("main@previous")  # undo
    assert store.pointers() == main_before
    assert store.get_meta("layer:version:topics") is None
    assert store.get_meta("layer:version:episodes") == "v1"
    assert store.on_branch("main@previous").pointers() == br.pointers()  # redo is possible


def test_promote_is_one_transaction(store, monkeypatch):
    build_main(store)
    store.create_branch("b")
    store.on_branch("b").retire("monthly", ["2024-01"])
    before = store.pointers()

    def boom(*a, **k):
        raise RuntimeError("crash between steps")

    monkeypatch.setattr(type(store), "_copy_failures", boom)
    with pytest.raises(RuntimeError):
        store.promote("b")
    assert store.pointers() == before
    assert store.branch_info("main@previous") is None


def test_delete_then_gc_removes_only_unreferenced_artifacts(store):
    t0, _, e0, _, _ = build_main(store)
    store.create_branch("keep")
    store.create_branch("drop")
    keep, drop = store.on_branch("keep"), store.on_branch("drop")
    kept = keep.put(layer="episodes", group_key="c0", materialization_key="kk", content="kept",
                    parents=[t0.artifact_id])
    dropped = drop.put(layer="episodes", group_key="c0", materialization_key="dd",
                       content="dropped", parents=[t0.artifact_id])
    assert store.unreferenced() == []
    store.delete_branch("drop")
    assert store.unreferenced() == [dropped.artifact_id]
    store.delete(store.unreferenced())
    assert store.find(kept.artifact_id) is not None and store.find(dropped.artifact_id) is None
    with pytest.raises(BranchError):
        store.delete_branch("drop")


def test_deleting_an_artifact_drops_every_branch_pointer_to_it(store):
    t0, *_ = build_main(store)
    store.create_branch("b")
    store.delete([a.artifact_id for a in [t0, *store.descendants(t0.artifact_id)]])
    assert "c0" not in store.on_branch("b").current_index("transcripts")
    assert "c0" not in store.on_branch("b").current_index("episodes")


def test_diff_lists_added_removed_and_changed_groups(store):
    t0, t1, e0, *_ = build_main(store)
    store.create_branch("b")
    b = store.on_branch("b")
    b.put(layer="episodes", group_key="c0", materialization_key="k2", content="new",
          parents=[t0.artifact_id])
    b.retire("monthly", ["2024-01"])
    b.put(layer="topics", group_key="t", materialization_key="tk", content="t",
          parents=[t1.artifact_id])
    diff = {d.layer: d for d in store.diff_branches("main", "b")}
    assert [g for g, *_ in diff["episodes"].changed] == ["c0"] and diff["episodes"].shared == 1
    assert diff["monthly"].removed == ["2024-01"]
    assert diff["topics"].added == ["t"]
    assert diff["transcripts"].shared == 2 and not diff["transcripts"].changed


@pytest.mark.parametrize("name", ["", "main", "a b", "-x", "x@previous", "../x", "a" * 70])
def test_bad_or_reserved_branch_names_are_refused(store, name):
    with pytest.raises(BranchError):
        store.create_branch(name)


def test_unknown_branch_is_a_clear_error(store):
    with pytest.raises(BranchError, match="no branch 'ghost'"):
        store.create_branch("x", from_branch="ghost")
    with pytest.raises(BranchError, match="no branch 'ghost'"):
        store.promote("ghost")


def test_artifact_ids_do_not_depend_on_the_branch(store):
    store.create_branch("b")
    art = store.on_branch("b").put(layer="l", group_key="g", materialization_key="k", content="x")
    assert art.artifact_id == fingerprints.artifact_id("l", "g", "k")
