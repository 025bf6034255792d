"""Load a user's pipeline.py into a validated pipeline (a PipelineSpec; the file's own
`Pipeline`, synix_assets.pipeline.api, is one). A file is run once per process while it (and
what it read) is unchanged; each load gets its own copy of the pipeline."""
from __future__ import annotations

import copy
import os
import re
import runpy
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from synix_assets.pipeline import file_reads
from synix_assets.pipeline.spec import PipelineSpec
from synix_resources.errors import PipelineDefinitionError, SynixError
from synix_resources.process import endings, interrupts
from synix_resources.settings import settings


class DeclarationEnds(BaseException):
    """Raised by a pipeline's first action (run, plan, search…) while its file is being loaded:
    the file is a script that declares a pipeline and then uses it, and what it declared up to
    that line is the pipeline. A BaseException, so the script's own `except Exception` lets it
    through."""

    def __init__(self, pipeline: PipelineSpec, action: str, namespace: dict[str, Any]):
        super().__init__(action)
        self.pipeline = pipeline
        self.action = action
        self.namespace = namespace


_depth = threading.local()  # pipeline files being loaded in this thread


def loading() -> bool:
    """Whether a pipeline file is being loaded in this thread (its actions then end the load)."""
    return getattr(_depth, "n", 0) > 0


@dataclass
class Declaration:
    """What a pipeline file declares: the pipeline, the names the file defined on the way, and
    the action it stopped at (None for a file that only declares)."""

    pipeline: PipelineSpec
    namespace: dict[str, Any]
    action: str | None = None

    def names(self) -> dict[str, Any]:
        """The file's own names (functions, imports, constants), for code that extends it."""
        return {k: v for k, v in self.namespace.items() if not k.startswith("__") and k != "pipeline"}

    def copy(self) -> "Declaration":
        """A pipeline the caller may change (remove a step, set base_dir) without changing the
        one kept for the next load; prompt functions stay the same objects."""
        return Declaration(copy.deepcopy(self.pipeline), dict(self.namespace), self.action)


# A pipeline file is run once per process for each content of the files it read (itself, a
# branch's declaration.py it loads, a TOML: pipeline/file_reads.py): every action of a script
# loads its pipeline, and running the script's top level again each time would repeat its side
# effects (a print before the first action ran dozens of times per script run).
_loaded: dict[tuple[Path, Path | None], tuple[file_reads.Reads, Declaration]] = {}
_loaded_lock = threading.Lock()


def load_pipeline(path: str | Path, *, base_dir: str | Path | None = None) -> PipelineSpec:
    """Run the file and return its module-level `pipeline`; relative paths resolve next to it,
    or against `base_dir` (a branch's pipeline file lives under .synix/ but reads the
    project's exports). A script that acts on its pipeline (`pipeline.run()`) is run up to its
    first action (DeclarationEnds)."""
    return load_declaration(path, base_dir=base_dir).pipeline


def declared(beside: str | Path, name: str) -> Declaration:
    """The declaration of the file `name` next to `beside` (a branch's copy of a script)."""
    return load_declaration(Path(beside).resolve().parent / name)


def load_declaration(path: str | Path, *, base_dir: str | Path | None = None) -> Declaration:
    path = Path(path).resolve()
    if path.is_dir():
        raise PipelineDefinitionError(f"pipeline file {path} is a folder, not a Python file",
                                      hint="give the .py file that defines `pipeline`")
    if not path.is_file():
        raise PipelineDefinitionError(f"pipeline file {path} does not exist",
                                      hint="run `synix init DIR` to create one")
    key = (path, Path(base_dir).resolve() if base_dir is not None else None)
    with _loaded_lock:
        kept = _loaded.get(key)
    if kept is not None and file_reads.unchanged(kept[0]):
        file_reads.note_all(kept[0])  # a load this one is nested in read them too
        declaration = kept[1].copy()
    else:
        with file_reads.recording() as reads:
            file_reads.note(path)
            declaration = _run(path, base_dir)
        try:
            kept_copy = declaration.copy()
        except (TypeError, copy.Error):  # an object the file declared cannot be copied: not kept
            kept_copy = None
        if kept_copy is not None:
            with _loaded_lock:
                _loaded[key] = (tuple(reads), kept_copy)
    # on each load, not in the kept declaration: the setting is this run's, not the file's
    read_source_dirs(declaration.pipeline, settings().source_dir)
    return declaration


def keep_running_script(path: str | Path, base_dir: str | Path | None, pipeline: PipelineSpec,
                        action: str) -> None:
    """The script this process runs (`python memory.py`), at its first action, is what loading
    it would declare: running it again to stop at the same action would repeat its top level
    (a print before `sync()` printed twice). Kept as its declaration when that is certain: the
    file still holds the code that runs, and that code never reads `__name__` (a
    `if __name__ == "__main__":` block runs as a script but not as a loaded pipeline file)."""
    path = Path(path).resolve()
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if main is None or not main_file or Path(main_file).resolve() != path:
        return
    key = (path, Path(base_dir).resolve() if base_dir is not None else None)
    with _loaded_lock:
        if key in _loaded:
            return
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return
    try:
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return
    if code != frame.f_code or _reads_name(code):
        return
    spec = copy.deepcopy(pipeline)
    spec.base_dir = key[1] or spec.base_dir or path.parent
    declaration = Declaration(spec.validate(), dict(vars(main), pipeline=spec), action)
    with _loaded_lock:
        _loaded.setdefault(key, (((path, file_reads.digest(path)),), declaration))


def _reads_name(code: CodeType) -> bool:
    return "__name__" in code.co_names or any(
        isinstance(c, CodeType) and _reads_name(c) for c in code.co_consts)


def _run(path: Path, base_dir: str | Path | None) -> Declaration:
    """Run the pipeline file (up to its first action) and validate what it declared."""
    action = None
    _depth.n = getattr(_depth, "n", 0) + 1
    try:
        with endings.kept():
            namespace = runpy.run_path(str(path), run_name="__synix_pipeline__")
    except DeclarationEnds as end:
        namespace, action = dict(end.namespace, pipeline=end.pipeline), end.action
    except SyntaxError as exc:
        raise PipelineDefinitionError(
            f"{path}:{exc.lineno}: syntax error: {exc.msg}", hint="fix the line and run again") from None
    except SynixError:
        raise
    except SystemExit as exc:  # would end `synix` silently, with status 0 and nothing built
        raise PipelineDefinitionError(
            f"{path}:{_user_frame(exc, path)}: the pipeline file called sys.exit({exc.code!r}) while loading",
            hint="a pipeline file must only define `pipeline = Pipeline(...)`; remove the exit") from None
    except endings.ProcessEnding as exc:
        raise PipelineDefinitionError(
            f"{path}:{_user_frame(exc, path)}: the pipeline file called {exc} while loading",
            hint="a pipeline file must only define `pipeline = Pipeline(...)`; remove the call") from None
    except KeyboardInterrupt as exc:
        if interrupts.received():
            raise  # a real Ctrl-C / SIGTERM while the file was loading
        raise PipelineDefinitionError(
            f"{path}:{_user_frame(exc, path)}: the pipeline file raised KeyboardInterrupt while loading",
            hint="a pipeline file must only define `pipeline = Pipeline(...)`; remove the raise") from None
    except Exception as exc:  # a user's file can raise anything; report where, keep the cause
        frame = _user_frame(exc, path)
        raise PipelineDefinitionError(
            f"{path}:{frame}: {type(exc).__name__}: {exc}",
            hint="fix the pipeline file and run again") from exc
    finally:
        _depth.n -= 1
    pipeline = namespace.get("pipeline")
    if not isinstance(pipeline, PipelineSpec):
        raise PipelineDefinitionError(
            f"{path} defines no `pipeline = Pipeline(...)` at module level",
            hint="see `synix init` for a working example")
    if base_dir is not None:
        pipeline.base_dir = Path(base_dir).resolve()
    elif pipeline.base_dir is None:
        pipeline.base_dir = path.parent
    return Declaration(pipeline.validate(), namespace, action)


def read_source_dirs(pipeline: PipelineSpec, given: str | None) -> None:
    """Point export sources at the folders of SYNIX_SOURCE_DIR (`synix run --source-dir`): a
    folder for the pipeline's one export source, or `NAME=folder` entries. Here, where every
    pipeline is loaded, so each load of this build (plan, Dagster's definitions, workers) reads
    the same folders. A source's path is in no step version, so keys do not change with it."""
    if not given:
        return
    exports = [s for s in pipeline.sources.values() if s.kind == "exports"]
    named = {}
    for entry in filter(None, given.split(os.pathsep)):
        name, eq, folder = entry.partition("=")
        if not eq or not re.fullmatch(r"[\w-]+", name):
            if len(exports) != 1:
                raise PipelineDefinitionError(
                    f"--source-dir {entry}: the pipeline has {len(exports)} export sources, so a folder alone "
                    "cannot say which it replaces",
                    hint=f"write NAME=FOLDER, NAME one of: {', '.join(s.name for s in exports) or '(none)'}")
            name, folder = exports[0].name, entry
        if name not in {s.name for s in exports}:
            raise PipelineDefinitionError(f"--source-dir {entry}: the pipeline has no export source {name!r}",
                                          hint=f"export sources: {', '.join(s.name for s in exports) or '(none)'}")
        where = pipeline.resolve(Path(folder).expanduser())
        if not where.is_dir():
            raise PipelineDefinitionError(f"--source-dir {entry}: {where} is not a folder",
                                          hint="give the folder holding the exports")
        named[name] = where
    for name, where in named.items():
        pipeline.sources[name].path = where


def _user_frame(exc: BaseException, path: Path) -> str:
    line = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path:
            line = str(frame.lineno)
    return line
