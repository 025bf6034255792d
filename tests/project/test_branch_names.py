"""project/branches.py: the one list of a project's branches (Dagster's graphs, forget's folders)."""
from __future__ import annotations

from synix_assets.project.branches import branch_names, registered_branches


def _branch_with(paths, names: list[str], *, snapshot_of: str):
    """Branches registered in a real store, a promote's main@previous snapshot among them."""
    with paths.open_store() as store:
        for name in names:
            store.create_branch(name)
        store.promote(snapshot_of)


def test_before_the_store_exists_only_main_is_listed_and_no_store_is_created(demo_project):
    assert branch_names(demo_project, snapshots=False) == ["main"]
    assert branch_names(demo_project, snapshots=True) == ["main"]
    assert not demo_project.has_store()


def test_main_comes_first_then_branches_with_a_pipeline_file_by_name(demo_project):
    _branch_with(demo_project, ["zeta", "alpha", "nofile"], snapshot_of="zeta")
    for name in ("zeta", "alpha", "main@previous"):
        pipeline = demo_project.on_branch(name).pipeline_file
        pipeline.parent.mkdir(parents=True, exist_ok=True)
        pipeline.write_bytes(demo_project.pipeline_file.read_bytes())
    demo_project.on_branch("nofile").branch_dir.mkdir(parents=True)  # a folder, no pipeline

    assert branch_names(demo_project, snapshots=False) == ["main", "alpha", "zeta"]
    assert branch_names(demo_project, snapshots=True) == ["main", "alpha", "main@previous", "zeta"]
    # forget scrubs every registered branch folder, with a pipeline file or not
    assert registered_branches(demo_project, snapshots=True) == \
        ["main", "alpha", "main@previous", "nofile", "zeta"]
    assert registered_branches(demo_project.on_branch("alpha"), snapshots=False) == \
        ["main", "alpha", "nofile", "zeta"]
