"""Where a name a door was given becomes the project and branch it works on: the CLI's
-p/--project and --branch (and SYNIX_PROJECT / SYNIX_BRANCH), `synix eval --branch`, `synix mcp`
and `synix ask`, and the `?branch=` of the HTTP API and the explorer all resolve here.

Every name is checked by `synix_resources.names` before any file is touched; a branch must then
exist in the project.
"""
from __future__ import annotations

from pathlib import Path

from synix_assets.project import MAIN, ProjectPaths, find_project
from synix_assets.project.paths import is_project
from synix_assets.project.branches import branch_names, require_branch
from synix_resources.errors import ArtifactNotFound, BranchError, PipelineDefinitionError
from synix_resources.names import check_branch


def open_project(project: str | Path | None, branch: str | None) -> ProjectPaths:
    """The project containing `project` (default: the current folder, searching upwards) on
    `branch` (default: the project's current branch); a branch that does not exist (e.g.
    deleted meanwhile) is refused. `branch=''` is a bad name, not "no branch given"."""
    if branch is not None:
        check_branch(branch)
    paths = find_project(project, branch)
    check_branch_usable(paths)
    return paths


def open_pipeline_file(file: str | Path, branch: str | None) -> ProjectPaths:
    """The project whose main pipeline file `file` is (the 002 design's `synix run
    pipeline.py`): the project is the file's folder, and the file must be the one that folder's
    project builds (pipeline.py, or the script `.synix/config.toml` names)."""
    path = Path(file).expanduser().resolve()
    if not path.is_file():
        raise PipelineDefinitionError(f"pipeline file {file} does not exist",
                                      hint="give the pipeline.py of a project, or run `synix init DIR`")
    paths = ProjectPaths(path.parent)
    if not is_project(path.parent) or paths.pipeline_file.resolve() != path:
        builds = paths.pipeline_file if is_project(path.parent) else None
        raise PipelineDefinitionError(
            f"{file} is not the pipeline file of a project"
            + (f" (the project in {path.parent} builds {builds.name})" if builds else ""),
            hint=f"name {builds}" if builds else "name a project's pipeline.py, or create one with `synix init DIR`")
    return open_project(path.parent, branch)


def check_branch_usable(paths: ProjectPaths) -> None:
    """A clear error when the selected branch does not exist (e.g. deleted meanwhile)."""
    if paths.branch == MAIN:
        return
    if not paths.pipeline_file.is_file():
        raise BranchError(f"no branch {paths.branch!r} in {paths.root}",
                          hint="see `synix branch list`, or `synix branch switch main`")
    require_branch(paths, paths.branch)


def readable_branches(paths: ProjectPaths) -> list[str]:
    """The branches a reader may name: main, then every branch that has its pipeline file,
    snapshots such as main@previous included. The store is only read."""
    return branch_names(paths, snapshots=True, read_only=True)


def resolve_branch(paths: ProjectPaths, branch: str) -> ProjectPaths:
    """The branch a read names (a `?branch=` of the HTTP API or the explorer), as the paths to
    serve: the name checked by `synix_resources.names`, then refused unless this project has
    that branch (`readable_branches`)."""
    check_branch(branch)
    names = readable_branches(paths)
    if branch not in names:
        raise ArtifactNotFound(f"no branch {branch!r} in this project",
                               hint=f"branches here: {', '.join(names)}")
    return paths.on_branch(branch)
