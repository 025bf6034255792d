"""app/workspace.py: the one place a door's project and branch names become a project."""
from __future__ import annotations

import pytest

from synix_assets.app.init import init_project
from synix_assets.app.workspace import open_project, readable_branches, resolve_branch
from synix_resources.errors import ArtifactNotFound, BranchError, InvalidBranchName, ProjectNotFound


def test_a_bad_branch_name_is_refused_before_the_project_is_looked_for(tmp_path):
    with pytest.raises(InvalidBranchName, match="invalid branch name"):
        open_project(tmp_path / "no-project-here", "../escape")
    with pytest.raises(ProjectNotFound):  # a good name goes on to the lookup
        open_project(tmp_path / "no-project-here", "topical")


def test_open_project_takes_the_current_branch_and_refuses_a_missing_one(tmp_path):
    root = init_project(tmp_path / "mem")
    paths = open_project(root / "exports", None)  # a folder inside the project finds it
    assert (paths.root, paths.branch) == (root, "main")
    with pytest.raises(BranchError, match=r"no branch 'topical' in "):
        open_project(root, "topical")


def test_a_read_resolves_only_a_branch_the_project_has_without_creating_the_store(tmp_path):
    root = init_project(tmp_path / "mem")
    paths = open_project(root, None)
    assert readable_branches(paths) == ["main"]
    assert resolve_branch(paths, "main").branch == "main"
    with pytest.raises(ArtifactNotFound, match=r"no branch 'topical' in this project") as err:
        resolve_branch(paths, "topical")
    assert err.value.hint == "branches here: main"
    with pytest.raises(InvalidBranchName):
        resolve_branch(paths, "a b")
    assert not paths.has_store()
