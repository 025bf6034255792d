"""Where a pipeline declared in Python keeps its state, and how a project is opened from Python.

A pipeline belongs to the folder of the file that declares it (`base_dir`): its state is that
folder's `.synix/`, exactly as for a `synix init` project. A `synix init` project's file is
`pipeline.py`; a script with another name that declares a pipeline and acts on it
(`pipeline.run()`) is recorded as the folder's pipeline file in `.synix/config.toml`
(`pipeline = "memory.py"`), so `synix run`, `synix ui`, `dagster dev` and the sensors load that
script too. Loading a script runs it up to its first action (pipeline.loader.DeclarationEnds): what
it declared by then is the pipeline, and an action whose pipeline differs from that declaration is
refused, so Python and Dagster never build two different pipelines under one name. After a branch
is promoted, main's definition is the branch's; the script, unchanged since, acts on that one.
"""
from __future__ import annotations

import logging
from pathlib import Path

from synix_assets.project import MAIN, PIPELINE_FILE, ProjectPaths, find_project, project_config
from synix_assets.pipeline.spec import PipelineSpec
from synix_assets.project.config import SUPERSEDED, script_mark, set_project_config
from synix_resources.errors import PipelineDefinitionError

log = logging.getLogger("synix.python")


def register(root: Path, declared_in: Path) -> None:
    """Make `declared_in` the pipeline file of the project at `root` (pipeline.py is, unless a
    promote replaced it: then it is again)."""
    root, declared_in = root.resolve(), declared_in.resolve()
    own = declared_in == root / PIPELINE_FILE
    if not own and (root / PIPELINE_FILE).is_file():
        raise PipelineDefinitionError(
            f"{root} is the project of its pipeline.py, and {declared_in.name} declares another pipeline there",
            hint=f"declare it in its own folder, or open that project: synix.open({str(root)!r})")
    name = str(declared_in.relative_to(root)) if declared_in.is_relative_to(root) else str(declared_in)
    configured = project_config(root).get("pipeline")
    if configured == name or (own and configured is None):
        return
    if configured:
        log.warning("%s now declares the pipeline of %s (it was %s)", declared_in.name, root, configured)
    set_project_config(root, "pipeline", None if own else name)
    set_project_config(root, SUPERSEDED, None)  # edited since a promote: the script leads again


def superseded(root: Path, declared_in: Path) -> bool:
    """Whether a branch promoted into the project replaced the definition `declared_in` gave
    main, and the file is still exactly as it was then: its pipeline then acts on main's
    promoted definition (putting the old one back would rebuild the promoted layers)."""
    mark = project_config(root).get(SUPERSEDED)
    return mark is not None and mark == script_mark(root, declared_in)


def check_same(pipeline: PipelineSpec, loaded: PipelineSpec, source: Path) -> None:
    """The pipeline acted on must be the one its file declares (what Dagster and the CLI load)."""
    mine, theirs = fingerprint(pipeline), fingerprint(loaded)
    if mine == theirs:
        return
    differs = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    raise PipelineDefinitionError(
        f"pipeline '{pipeline.name}' differs from what {source.name} declares before its first "
        f"action ({', '.join(differs[:6])})",
        hint="declare every source, step and artifact before the first run()/plan()/search() "
             "call (or change the branch with pipeline.branch(...))")


def fingerprint(pipeline: PipelineSpec) -> dict[str, str]:
    out = {f"source {n}": f"{pipeline.resolve(s.path)}|{s.format}|{s.kind}" for n, s in pipeline.sources.items()}
    out.update({f"step {l}": pipeline.version(l) for l in pipeline.layer_order()})
    out.update({f"artifact {n}": repr(sorted((k, str(v)) for k, v in vars(p).items()))
                for n, p in pipeline.projections.items()})
    out["name"] = pipeline.name
    return out


def open_paths(path: str | Path | None = None, branch: str | None = None) -> ProjectPaths:
    """The project at `path` (a folder, its pipeline file, or a folder inside it; default: the
    current folder) on `branch` (default: the project's current branch)."""
    return find_project(Path(path).expanduser() if path is not None else None, branch)


__all__ = ["MAIN", "check_same", "fingerprint", "open_paths", "register", "superseded"]
