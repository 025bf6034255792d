"""`Pipeline`, the front door (`from synix import Pipeline`): the data class PipelineSpec (what
a pipeline declares) plus what it does — plan, sync, run, search, get, lineage, branch, eval,
purge, stats, runs, status, ask, gc (python_api/actions.py). Every action goes through the
application layer, with the project the pipeline belongs to (python_api/project.py)."""
from __future__ import annotations

import sys
from abc import ABCMeta
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from synix_assets.pipeline.loader import DeclarationEnds, keep_running_script, loading
from synix_assets.pipeline.spec import ENGINE_METHODS, PipelineSpec
from synix_assets.project import MAIN, ProjectPaths
from synix_assets.python_api.actions import Actions
from synix_assets.python_api.project import check_same, log, open_paths, register, superseded
from synix_assets.python_api.results import PurgeResult
from synix_resources.errors import PipelineDefinitionError

if TYPE_CHECKING:  # imported where used: a script that never branches does not load it
    from synix_assets.python_api.branch import PipelineBranch


def _caller_file(depth: int) -> Path | None:
    name = sys._getframe(depth + 1).f_globals.get("__file__")
    return Path(name).resolve() if name else None


def _declaring_namespace() -> dict[str, Any]:
    """The globals of the pipeline file being loaded (the frame that called the action)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "__synix_pipeline__":
            return dict(frame.f_globals)
        frame = frame.f_back
    return {}


class _PublicMembers(ABCMeta):
    """`help(Pipeline)` and `dir(Pipeline)` (what pydoc and completion read) list what a script
    declares and does: the spec's engine-side methods stay callable but unlisted."""

    def __dir__(cls) -> list[str]:
        return sorted(set(super().__dir__()) - ENGINE_METHODS
                      - {"__dict__", "__weakref__", "__abstractmethods__"})


class Pipeline(PipelineSpec, Actions, metaclass=_PublicMembers):
    """A memory pipeline: declare sources, steps and artifacts, then act on it.

        pipeline = Pipeline("personal-memory", agent="mark")
        pipeline.source("chatgpt", file="exports/conversations.json", format="chatgpt-export")
        ...
        pipeline.run()
        for hit in pipeline.search("Rust"):
            print(hit.content, hit.leaves())

    Its state lives in `.synix/` next to the file that declares it (`base_dir`), and relative
    paths resolve there, never against the current directory.
    """

    def __init__(self, name: str, *, agent: str = "", description: str = "",
                 model: str | None = None, temperature: float = 0.3, max_tokens: int = 1024,
                 base_dir: str | Path | None = None, created_at: str | datetime | None = None):
        self.declared_in = _caller_file(1)
        if base_dir is None and self.declared_in is not None:
            base_dir = self.declared_in.parent
        super().__init__(name, agent=agent, description=description, model=model,
                         temperature=temperature, max_tokens=max_tokens, base_dir=base_dir,
                         created_at=created_at)
        self._opened: ProjectPaths | None = None

    def __repr__(self) -> str:
        where = f", project={str(self.base_dir)!r}" if self.base_dir else ""
        return (f"Pipeline({self.name!r}, sources={list(self.sources)}, steps={list(self.steps)}, "
                f"artifacts={list(self.projections)}{where})")

    # ---- opening --------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path | None = None) -> Pipeline:
        """Main's pipeline of an existing project (a folder, its pipeline file, or a folder
        inside it; default: the current folder); `.branch(name)` gives one of its branches."""
        paths = open_paths(path, MAIN)
        pipeline = paths.load_pipeline()
        if not isinstance(pipeline, Pipeline):  # a file that built a bare PipelineSpec
            raise PipelineDefinitionError(f"{paths.pipeline_file} does not declare a synix Pipeline",
                                          hint="write `from synix import Pipeline` in it")
        pipeline._opened = paths
        return pipeline

    @classmethod
    def from_toml(cls, source: str | Path, *, base_dir: str | Path | None = None,
                  namespace: dict[str, Any] | None = None) -> "Pipeline":
        """A pipeline read from TOML (a file written by `to_toml`, or its text); it belongs to
        the file that calls this, like one declared there."""
        caller = sys._getframe(1).f_globals
        if namespace is None:
            namespace = {k: v for k, v in caller.items() if callable(v)}
        if not isinstance(source, Path) and "\n" not in str(source) and caller.get("__file__"):
            file = Path(str(source)).expanduser()
            source = file if file.is_absolute() else Path(caller["__file__"]).resolve().parent / file
        pipeline = super().from_toml(source, base_dir=base_dir, namespace=namespace)
        assert isinstance(pipeline, Pipeline)
        pipeline.declared_in = Path(caller["__file__"]).resolve() if caller.get("__file__") else None
        return pipeline

    # ---- the project this pipeline acts on ------------------------------------------------

    def _paths(self, action: str) -> ProjectPaths:
        if loading():  # this file is being loaded for its declaration: it ends here
            raise DeclarationEnds(self, action, _declaring_namespace())
        if self._opened is not None:
            paths = self._opened
        elif self.declared_in is None:
            raise PipelineDefinitionError(
                f"pipeline '{self.name}' was declared outside a file, so Dagster and the CLI "
                "could not load it", hint="declare it in a .py file, or open a project: synix.open('mem')")
        else:
            root = self.base_dir or self.declared_in.parent
            paths = ProjectPaths(root, MAIN)
            if superseded(root, self.declared_in):
                self._adopt(paths)
            else:
                register(root, self.declared_in)
                keep_running_script(self.declared_in, paths.root, self, action)
        check_same(self, paths.load_pipeline(), paths.pipeline_file)
        return paths

    def _adopt(self, paths: ProjectPaths) -> None:
        """A branch was promoted since this script was last edited: this pipeline becomes
        main's definition (the promoted one) and acts on it from now on."""
        promoted = paths.load_pipeline()
        declared_in = self.declared_in
        assert declared_in is not None  # only a pipeline declared in a file has a script to supersede
        log.warning("%s is unchanged since a branch was promoted into %s: acting on main's promoted "
                    "definition (%s); edit %s to make it main's definition again", declared_in.name,
                    paths.root, paths.pipeline_file.relative_to(paths.root), declared_in.name)
        self.__dict__.update(vars(promoted))
        self.declared_in, self._opened = declared_in, paths

    @property
    def project(self) -> Path:
        """The folder whose `.synix/` holds this pipeline's state."""
        return self._paths("project").root

    # ---- main-only actions ----------------------------------------------------------------

    def branch(self, name: str, *, from_branch: str | None = None) -> PipelineBranch:
        """This pipeline's project on branch `name` (created from main if new): override steps,
        then plan, run, diff, eval and promote it (python_api/branch.py)."""
        from synix_assets.python_api.branch import PipelineBranch

        return PipelineBranch(self._paths("branch"), name, from_branch=from_branch)

    def branches(self) -> list[dict[str, Any]]:
        """Every branch with its records and last build (`synix branch list`)."""
        from synix_assets.app.branches import list_branches

        return list_branches(self._paths("branches"))

    def purge(self, record_id: str, *, cascade: bool = True, dry_run: bool = False) -> PurgeResult:
        """Delete a source record — a conversation, by a record id, a conversation id or an
        export file — and every record derived from it, on every branch; the memory is rebuilt
        without it (`synix purge`, §11.3). `dry_run=True` only lists `affected_records`."""
        from synix_assets.app.forget import purge

        if not cascade:
            raise PipelineDefinitionError(
                "purge without cascade would leave records built from the deleted one",
                hint="purge(record_id, cascade=True); preview with dry_run=True")
        return PurgeResult(purge(self._paths("purge"), record_id, dry_run).to_json())

    def gc(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Remove records no branch points at (`synix gc`)."""
        from synix_assets.app.branches import gc

        return gc(self._paths("gc"), dry_run=dry_run)


def open(path: str | Path | None = None) -> Pipeline:  # noqa: A001
    """`synix.open("mem")`: main's pipeline of an existing project (Pipeline.load); a branch of
    it is `synix.open("mem").branch("name")`."""
    return Pipeline.load(path)
