"""The name validators (synix_resources/names.py) and the folder helpers (synix_resources/folders.py):
whole-string rules, one-line errors, and removals that never reach past their parent."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from synix_resources import names
from synix_resources.errors import (BranchError, InvalidName, LiveInputError, PipelineDefinitionError,
                                    SynixError, TenantError, UnsafeRemoval)
from synix_resources.folders import inside, new_folder, remove_inside

CHECKS = {"branch": names.check_branch, "tenant": names.check_tenant, "session id": names.check_session_id,
          "layer": names.check_layer, "project": names.check_project}
DANGEROUS = ["", ".", "..", "../x", "a/b", "/abs", "a\\b", "acme\n", "acme\r\n", "\nacme", "a\x00b",
             "a\tb", "acme\u2028", None, 7, b"acme"]


@pytest.mark.parametrize("kind", sorted(CHECKS))
@pytest.mark.parametrize("name", DANGEROUS, ids=repr)
def test_every_kind_of_name_refuses_empty_dots_slashes_control_characters_and_a_trailing_newline(kind, name):
    with pytest.raises(InvalidName):
        CHECKS[kind](name)


@pytest.mark.parametrize("kind, name", [
    ("branch", "topical"), ("branch", "A.b-c_9"), ("branch", "a..b"), ("branch", "main"),
    ("branch", "main@previous"), ("branch", "x" * 63),
    ("tenant", "acme"), ("tenant", "acme-2"), ("tenant", "0" * 40),
    ("session id", "chat-1"), ("session id", "user:42.session_7"), ("session id", "s" * 80),
    ("layer", "episodes"), ("layer", "monthly-rollups"), ("layer", "épisodes_2"),
    ("project", "personal-memory"), ("project", "My memory 2.0"), ("project", "p"),
])
def test_the_names_the_rules_accepted_before_are_still_accepted(kind, name):
    assert CHECKS[kind](name) == name


@pytest.mark.parametrize("kind, name", [
    ("branch", "x" * 64), ("branch", "-x"), ("branch", "x.lock"), ("branch", "x.lock@previous"),
    ("branch", "..@previous"), ("tenant", "Acme"), ("tenant", "a" * 41), ("tenant", "a_b"),
    ("session id", "s" * 81), ("session id", ":s"), ("layer", "a b"), ("layer", "a.b"),
    ("project", " p"), ("project", "p "), ("project", "_p"), ("project", "p" * 81),
])
def test_the_names_the_rules_refused_before_are_still_refused(kind, name):
    with pytest.raises(InvalidName):
        CHECKS[kind](name)


def test_a_name_error_is_one_line_naming_the_name_escaped_and_the_rule():
    with pytest.raises(InvalidName) as info:
        names.check_tenant("acme\n")
    line = info.value.one_line()
    assert line == ("tenant name 'acme\\n' is not allowed: use 1-40 lowercase letters, digits and '-', "
                    "starting with a letter or digit")
    assert "\n" not in line
    with pytest.raises(InvalidName) as info:
        names.check_branch("x" * 500 + "\n")
    assert "\n" not in info.value.one_line() and len(info.value.one_line()) < 250
    with pytest.raises(InvalidName, match="invalid branch name '\\\\udcff'"):
        names.check_branch("\udcff")


def test_each_name_error_is_also_the_error_of_what_it_names_so_every_interface_answers_it_as_before():
    for check, kind in ((names.check_branch, BranchError), (names.check_tenant, TenantError),
                        (names.check_session_id, LiveInputError), (names.check_layer, PipelineDefinitionError),
                        (names.check_project, PipelineDefinitionError)):
        with pytest.raises(kind):
            check("..")


def test_a_new_branch_may_not_take_main_or_a_snapshot_name():
    for name in ("main", "main@previous", "topical@previous"):
        assert names.check_branch(name) == name
        with pytest.raises(InvalidName, match="reserved"):
            names.check_branch(name, new=True)
    assert names.check_branch("topical", new=True) == "topical"


def test_project_paths_takes_a_str_root_as_a_path_and_refuses_a_bad_branch(tmp_path, monkeypatch):
    from synix_assets.project import ProjectPaths

    monkeypatch.chdir(tmp_path)
    paths = ProjectPaths(".")
    assert paths.state_dir == Path(".synix") and paths.root == Path(".")
    assert ProjectPaths(str(tmp_path)).on_branch("topical").branch_dir == tmp_path / ".synix" / "branches" / "topical"
    for bad in ("..", "", ".", "a\n"):
        with pytest.raises(InvalidName):
            ProjectPaths(tmp_path, bad)
        with pytest.raises(InvalidName):
            paths.on_branch(bad)


# --- folders ------------------------------------------------------------------------------


def _tree(root) -> dict:
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = (os.readlink(path) if os.path.islink(path) else
                                                open(path, "rb").read() if os.path.isfile(path) else "dir")
    return out


@pytest.fixture
def parent(tmp_path):
    (tmp_path / "parent" / "child").mkdir(parents=True)
    (tmp_path / "parent" / "child" / "f.txt").write_text("child")
    (tmp_path / "parent" / "keep.txt").write_text("keep")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "precious.txt").write_text("precious")
    return tmp_path / "parent"


@pytest.mark.parametrize("target", ["", ".", "..", "child/..", "../outside", "/", "child/../..", "../parent"])
def test_remove_inside_refuses_the_parent_itself_and_anything_outside_and_removes_nothing(parent, target):
    before = _tree(parent.parent)
    with pytest.raises(UnsafeRemoval):
        remove_inside(parent / target if target != "/" else "/", parent, ignore_errors=True)
    assert _tree(parent.parent) == before


def test_remove_inside_removes_a_folder_strictly_inside_and_nothing_else(parent):
    assert remove_inside(parent / "child", parent) is True
    assert sorted(_tree(parent.parent)) == ["outside", "outside/precious.txt", "parent", "parent/keep.txt"]
    assert remove_inside(parent / "child", parent) is False


def test_remove_inside_unlinks_a_link_to_outside_without_following_it(parent):
    os.symlink(parent.parent / "outside", parent / "link")
    assert remove_inside(parent / "link", parent) is True
    assert not os.path.lexists(parent / "link")
    assert (parent.parent / "outside" / "precious.txt").read_text() == "precious"


def test_inside_follows_links_of_the_containing_folders(parent):
    os.symlink(parent.parent / "outside", parent / "via")
    with pytest.raises(UnsafeRemoval):  # parent/via/precious.txt really is outside/precious.txt
        inside(parent / "via" / "precious.txt", parent)


def test_new_folder_removes_the_folder_it_made_when_the_block_fails_and_nothing_else(parent):
    before = _tree(parent.parent)
    with pytest.raises(RuntimeError):
        with new_folder(parent / "fresh", parent, taken=SynixError("taken")) as made:
            (made / "half.txt").write_text("half-written")
            raise RuntimeError("the create failed")
    assert _tree(parent.parent) == before


def test_new_folder_refuses_a_folder_that_exists_and_leaves_it_as_it_was(parent):
    before = _tree(parent.parent)
    with pytest.raises(SynixError, match="taken"):
        with new_folder(parent / "child", parent, taken=SynixError("taken")):
            raise AssertionError("the block must not run")
    assert _tree(parent.parent) == before


def test_new_folder_keeps_a_folder_swapped_in_for_the_one_it_made(parent):
    with pytest.raises(RuntimeError):
        with new_folder(parent / "fresh", parent, taken=SynixError("taken")) as made:
            os.rename(made, parent / "moved")
            os.mkdir(made)  # another process's folder now, not ours
            (made / "theirs.txt").write_text("theirs")
            raise RuntimeError("the create failed")
    assert (parent / "fresh" / "theirs.txt").read_text() == "theirs"


@pytest.mark.parametrize("target", ["..", ".", ""])
def test_new_folder_refuses_to_make_the_parent_or_outside_it(parent, target):
    before = _tree(parent.parent)
    with pytest.raises(UnsafeRemoval):
        with new_folder(parent / target, parent, taken=SynixError("taken")):
            raise AssertionError("the block must not run")
    assert _tree(parent.parent) == before
