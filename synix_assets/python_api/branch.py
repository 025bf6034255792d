"""Branches from Python (the design's §4.5, §8.4): `branch = pipeline.branch("better-summaries")`,
`branch.transform(...)` to override a step, then `branch.plan(full=True)`, `branch.run(...)`,
`branch.diff().changed_steps`, `branch.eval("locomo")`, `branch.promote()`.

A branch's definition is its own `pipeline.py` (what `synix run --branch`, the Dagster UI and the
export sensor load), so an override made from Python is written into that file as one more
declaration, replacing the step of the same name. A prompt function is written there by
reference when it is importable (a module of its own, `synix_assets.pipeline.builtin_prompts`),
or by its source when it is a top-level function of the script or pipeline.py that declares the
pipeline (the branch's file has that file's names); a `template(...)` prompt file works anywhere.
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, overload

from synix_assets.app import branches
from synix_assets.pipeline.prompts import TemplateFile
from synix_assets.pipeline.spec import PipelineSpec
from synix_assets.project import MAIN, ProjectPaths
from synix_assets.python_api.actions import Actions
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
    if callable(fn) and module in ("__main__", "__synix_pipeline__") and qualname.isidentifier():
        return _embedded(fn, qualname, imports)
    if not callable(fn) or module in _NOT_IMPORTABLE or not module or "<locals>" in qualname:
        raise PipelineDefinitionError(
            f"prompt {qualname or fn!r} cannot be written into the branch's pipeline.py "
            f"(it is defined in {module or 'no module'})",
            hint="define the prompt function in a module next to pipeline.py and import it, "
                 "or use prompt=template('prompts/x.txt')")
    alias = f"_override_{qualname.replace('.', '_')}"
    imports.append(f"from {module} import {qualname.split('.')[0]} as {alias}")
    return alias + ("." + qualname.split(".", 1)[1] if "." in qualname else "")


def _embedded(fn: Any, name: str, code: list[str], seen: set[str] | None = None) -> str:
    """A top-level function of a script, written into the branch file by its source
    (decorators included, so its prompt identity is unchanged), after the names it uses from
    its script: the branch file is a copy of the project's pipeline file, which need not have
    them (`def f(record: Record)` there would fail with NameError: 'Record')."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise PipelineDefinitionError(
            f"prompt {name} has no readable source to write into the branch's pipeline.py",
            hint="define it in a module next to the pipeline and import it") from None
    seen = seen if seen is not None else set()
    seen.add(name)
    used = {n.id for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for used_name in sorted(used - seen):
        if used_name in fn.__globals__:
            _bind(used_name, fn.__globals__[used_name], name, code, seen)
    code.append("\n" + source.rstrip("\n") + "\n")
    return name


def _bind(name: str, value: Any, user: str, code: list[str], seen: set[str]) -> None:
    """A line giving `name` the value it has in the script of function `user`: an import, the
    source of another top-level function of that script, or a plain constant."""
    seen.add(name)
    if isinstance(value, ModuleType):
        code.append(f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}")
        return
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if callable(value) and module in ("__main__", "__synix_pipeline__") and qualname == name:
        _embedded(value, name, code, seen)
        return
    if (callable(value) and module and module not in _NOT_IMPORTABLE and qualname
            and getattr(sys.modules.get(module), qualname, None) is value):
        code.append(f"from {module} import {qualname}" + ("" if qualname == name else f" as {name}"))
        return
    try:
        literal = ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError):
        literal = False
    if not literal:
        raise PipelineDefinitionError(
            f"prompt {user} uses {name} ({type(value).__name__}), which cannot be written into the "
            "branch's pipeline.py", hint=f"define {name} in a module next to the pipeline and import it")
    code.append(f"{name} = {value!r}")


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


@dataclass
class BranchDiff:
    """`branch.diff()`: the steps whose definition differs from the base's and, per step, the
    records added, removed and changed (`synix branch diff --json`)."""

    report: dict[str, Any]

    @property
    def changed_steps(self) -> list[str]:
        """The steps whose output differs: changed, added or removed in the definition, or
        downstream of one that is (§4.5), in build order."""
        return list(self.report["changed_steps"])

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.report["steps"]

    @property
    def layers(self) -> list[dict[str, Any]]:
        return self.report["layers"]

    def to_json(self) -> dict[str, Any]:
        return self.report


class PipelineBranch(Actions):
    """One branch of a project (created from `from_branch`, default main, on first use)."""

    def __init__(self, root: ProjectPaths, name: str, *, from_branch: str | None = None):
        main = root.on_branch(MAIN)
        self.paths = main.on_branch(name)
        if name != MAIN and not self.paths.pipeline_file.exists():
            branches.create_branch(main, name, from_branch=from_branch or MAIN)

    def _paths(self, action: str) -> ProjectPaths:
        return self.paths

    @property
    def name(self) -> str:
        return self.paths.branch

    @property
    def pipeline(self) -> PipelineSpec:
        """The branch's pipeline as its file defines it now."""
        return self.paths.load_pipeline()

    def _override(self, method: str, name: str, kwargs: dict[str, Any]) -> "PipelineBranch":
        if self.name == MAIN:
            raise PipelineDefinitionError("main's pipeline is edited in its own file",
                                          hint="branch first: pipeline.branch('experiment')")
        before = self.paths.pipeline_file.read_text(encoding="utf-8")
        code = override_code(method, name, kwargs)
        if before.rstrip("\n").endswith(code.rstrip("\n")):
            return self  # already the last override: a script run again does not grow the file
        header = "" if OVERRIDE_HEADER in before else f"\n\n{OVERRIDE_HEADER}\n"
        branches.write_branch_pipeline(self.paths, before.rstrip("\n") + "\n" + header + code)
        return self

    def transform(self, name: str, **kwargs: Any) -> "PipelineBranch":
        """Replace (or add) a transform step on this branch; same arguments as Pipeline.transform."""
        return self._override("transform", name, kwargs)

    def aggregate(self, name: str, **kwargs: Any) -> "PipelineBranch":
        return self._override("aggregate", name, kwargs)

    def fold(self, name: str, **kwargs: Any) -> "PipelineBranch":
        return self._override("fold", name, kwargs)

    @overload
    def diff(self, record: None = None, *, base: str = MAIN) -> BranchDiff: ...

    @overload
    def diff(self, record: str, *, base: str = MAIN) -> dict[str, Any]: ...

    def diff(self, record: str | None = None, *, base: str = MAIN) -> BranchDiff | dict[str, Any]:
        """How this branch differs from `base` (a BranchDiff), or one record's text diff."""
        root = self.paths.on_branch(MAIN)
        if record is not None:
            return branches.diff_record(root, self.name, record, base=base)
        return BranchDiff(branches.diff_branch(root, self.name, base=base))

    def promote(self, *, force: bool = False) -> dict[str, Any]:
        """Main serves this branch's pipeline and memory (undo: promote 'main@previous')."""
        return branches.promote_branch(self.paths.on_branch(MAIN), self.name, force=force)

    def delete(self) -> dict[str, Any]:
        return branches.delete_branch(self.paths.on_branch(MAIN), self.name)

    def switch(self) -> dict[str, Any]:
        """Make this the project's current branch: the one `synix.open(path)` and commands
        without --branch act on (`synix branch switch`)."""
        return branches.switch_branch(self.paths.on_branch(MAIN), self.name)

    def __repr__(self) -> str:
        return f"PipelineBranch({self.name!r} of {self.paths.root})"
