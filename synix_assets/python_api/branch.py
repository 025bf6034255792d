"""Branches from Python (the design's §4.5): `branch = pipeline.branch("better-summaries")`,
`branch.transform(...)` to override a step, then `branch.plan()`, `branch.run()`,
`branch.diff()`, `branch.promote()`.

A branch's definition is its own `pipeline.py` (what `synix run --branch`, the Dagster UI and the
export sensor load), so an override made from Python is written into that file as one more
declaration, replacing the step of the same name. Prompts given as functions must therefore be
importable (a module next to pipeline.py, or `synix_assets.pipeline.builtin_prompts`); a
`template(...)` prompt file works anywhere.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from synix_assets.app import branches
from synix_assets.pipeline.prompts import TemplateFile
from synix_assets.project import MAIN, ProjectPaths
from synix_resources.errors import PipelineDefinitionError

# Byte-identical to what earlier versions wrote (they named the module by its old path): an
# existing branch file is searched for it before a header is appended.
OVERRIDE_HEADER = "# --- overrides written by the Python branch API (synix_assets.engine.branch_api) ---"
_NOT_IMPORTABLE = {"__main__", "__synix_pipeline__", "builtins"}


def _prompt_code(fn: Any, imports: list[str]) -> str:
    if isinstance(fn, TemplateFile):
        imports.append("from synix_assets.pipeline.prompts import template as _override_template")
        return f"_override_template({str(Path(fn.path).resolve())!r})"
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not callable(fn) or module in _NOT_IMPORTABLE or not module or "<locals>" in qualname:
        raise PipelineDefinitionError(
            f"prompt {qualname or fn!r} cannot be written into the branch's pipeline.py "
            f"(it is defined in {module or 'no module'})",
            hint="define the prompt function in a module next to pipeline.py and import it, "
                 "or use prompt=template('prompts/x.txt')")
    alias = f"_override_{qualname.replace('.', '_')}"
    imports.append(f"from {module} import {qualname.split('.')[0]} as {alias}")
    return alias + ("." + qualname.split(".", 1)[1] if "." in qualname else "")


def _value_code(value: Any, imports: list[str]) -> str:
    if callable(value) or isinstance(value, TemplateFile):
        return _prompt_code(value, imports)
    if isinstance(value, Path):
        return repr(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_code(v, imports) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_code(v, imports)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (str, int, float, bool)):
        return repr(value)
    raise PipelineDefinitionError(f"cannot write {value!r} into a pipeline file",
                                  hint="pass plain values (text, numbers, lists) and prompt functions")


def override_code(method: str, name: str, kwargs: dict[str, Any]) -> str:
    """Python source that replaces step `name` with `pipeline.<method>(name, **kwargs)`."""
    imports: list[str] = []
    args = ", ".join([repr(name), *(f"{k}={_value_code(v, imports)}" for k, v in kwargs.items())])
    lines = [*dict.fromkeys(imports), f"pipeline.remove({name!r})",
             f"pipeline.{method}({args})"]
    return "\n".join(lines) + "\n"


class PipelineBranch:
    """One branch of the project that `pipeline` belongs to (created on first use)."""

    def __init__(self, pipeline, name: str, *, from_branch: str | None = None):
        if pipeline.base_dir is None:
            raise PipelineDefinitionError(
                "this pipeline belongs to no project folder",
                hint="load it from a project (synix_assets.pipeline.loader.load_pipeline("
                     "'mem/pipeline.py')) before branching")
        root = ProjectPaths(pipeline.base_dir)
        self.paths = root.on_branch(name)
        if name != MAIN and not self.paths.pipeline_file.exists():
            branches.create_branch(root, name, from_branch=from_branch or MAIN)

    @property
    def name(self) -> str:
        return self.paths.branch

    @property
    def pipeline(self):
        """The branch's pipeline as its file defines it now."""
        return self.paths.load_pipeline()

    def _override(self, method: str, name: str, kwargs: dict[str, Any]) -> "PipelineBranch":
        if self.name == MAIN:
            raise PipelineDefinitionError("main's pipeline is edited in pipeline.py itself",
                                          hint="branch first: pipeline.branch('experiment')")
        before = self.paths.pipeline_file.read_text(encoding="utf-8")
        header = "" if OVERRIDE_HEADER in before else f"\n\n{OVERRIDE_HEADER}\n"
        branches.write_branch_pipeline(self.paths, before.rstrip("\n") + "\n" + header +
                                       override_code(method, name, kwargs))
        return self

    def transform(self, name: str, **kwargs: Any) -> "PipelineBranch":
        """Replace (or add) a transform step on this branch; same arguments as Pipeline.transform."""
        return self._override("transform", name, kwargs)

    def aggregate(self, name: str, **kwargs: Any) -> "PipelineBranch":
        return self._override("aggregate", name, kwargs)

    def fold(self, name: str, **kwargs: Any) -> "PipelineBranch":
        return self._override("fold", name, kwargs)

    def plan(self, **kwargs: Any):
        """What `synix plan --branch` reports: calls, tokens, $ and the cost ratio to main."""
        from synix_assets.app.plan import make_plan

        return make_plan(self.paths, **kwargs)

    def run(self, **kwargs: Any):
        """Build the branch (only what differs from what the store already holds)."""
        from synix_assets.app.run import run_build

        return run_build(self.paths, **kwargs)

    def diff(self, record: str | None = None, *, base: str = MAIN) -> dict:
        root = self.paths.on_branch(MAIN)
        if record is not None:
            return branches.diff_record(root, self.name, record, base=base)
        return branches.diff_branch(root, self.name, base=base)

    def promote(self, *, force: bool = False) -> dict:
        return branches.promote_branch(self.paths.on_branch(MAIN), self.name, force=force)

    def delete(self) -> dict:
        return branches.delete_branch(self.paths.on_branch(MAIN), self.name)
