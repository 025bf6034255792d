"""The branches of a project, as its store registers them: main first, then the others by name.

`branch_names` is the list Dagster shows as graphs: the branches that have their pipeline file. A snapshot (`main@previous`, the restore point a promote leaves) is a
branch too, with its own pipeline file and projections, but no graph of its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_resources.errors import BranchError
from synix_resources.names import MAIN

if TYPE_CHECKING:
    from synix_assets.project.paths import ProjectPaths


def registered_branches(paths: ProjectPaths, *, snapshots: bool, read_only: bool = False) -> list[str]:
    """Every branch in the store (main first, then by name), with the snapshots or without;
    just main before the store exists. `read_only`: open the store for reading only, as the
    servers that must never change the memory do."""
    if not paths.has_store():
        return [MAIN]
    with paths.on_branch(MAIN).open_store(read_only=read_only) as store:
        names = [b.name for b in store.branches()]
    return names if snapshots else [n for n in names if "@" not in n]


def branch_names(paths: ProjectPaths, *, snapshots: bool, read_only: bool = False) -> list[str]:
    """main, then every other branch that has its pipeline file (`snapshots`: restore points
    such as main@previous too; `read_only`: see `registered_branches`)."""
    return [n for n in registered_branches(paths, snapshots=snapshots, read_only=read_only)
            if n == MAIN or paths.on_branch(n).pipeline_file.is_file()]


def require_branch(paths: ProjectPaths, name: str) -> None:
    """Refuses a branch the project's store does not register (main always exists)."""
    with paths.open_store() as store:
        if name != MAIN and store.branch_info(name) is None:
            raise BranchError(f"no branch {name!r}", hint="see `synix branch list`")
