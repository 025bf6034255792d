"""Load a user's pipeline.py into a validated pipeline (a PipelineSpec; the file's own
`Pipeline`, synix_assets.pipeline.api, is one)."""
from __future__ import annotations

import contextlib
import os
import re
import runpy
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from synix_assets.pipeline.spec import PipelineSpec
from synix_resources.errors import PipelineDefinitionError, SynixError
from synix_resources.process import interrupts
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
    action = None
    _depth.n = getattr(_depth, "n", 0) + 1
    try:
        with _process_kept():
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
    except ProcessEnding as exc:
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
    read_source_dirs(pipeline, settings().source_dir)
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


class ProcessEnding(BaseException):
    """pipeline.py tried to end or replace the process while loading (a BaseException, so the
    file's own `except Exception` cannot swallow it)."""


# os._exit ends the process with the status it is given, skipping every handler; exec replaces
# the program (whose status then stands for synix's). Every os.exec* goes through execv/execve.
_ENDINGS = ("_exit", "execv", "execve")


_loading: dict[tuple[int, int], int] = {}  # (pid, thread) → loads under way there (they can nest)
_saved: list[tuple[ModuleType, str, Callable[..., Any]]] = []
_guard_lock = threading.Lock()


@contextlib.contextmanager
def _process_kept() -> Iterator[None]:
    """While pipeline.py runs in this process, its calls that would end the process raise
    ProcessEnding instead: `os._exit(0)` would otherwise end `synix run` as a success with nothing
    built. Only loading threads are guarded: other threads' calls, and those of a child the file
    forks (multiprocessing ends its children with os._exit), go through. Concurrent loads (the
    server's threads) share one set of guards, removed when the last load ends."""
    key = (os.getpid(), threading.get_ident())
    with _guard_lock:
        if not _loading:
            modules = {os, sys.modules.get(os.name, os)}  # `posix._exit` is os._exit
            _saved[:] = [(m, name, getattr(m, name)) for m in modules for name in _ENDINGS if hasattr(m, name)]
            for module, name, real in _saved:
                setattr(module, name, _guarded(name, real))
        _loading[key] = _loading.get(key, 0) + 1
    try:
        yield
    finally:
        with _guard_lock:
            _loading[key] -= 1
            if not _loading[key]:
                del _loading[key]
            if not _loading:
                for module, name, real in _saved:
                    setattr(module, name, real)


def _guarded(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if (os.getpid(), threading.get_ident()) not in _loading:
            return real(*args, **kwargs)
        shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        raise ProcessEnding(f"os.{name}({shown})")
    return call


def _user_frame(exc: BaseException, path: Path) -> str:
    line = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path:
            line = str(frame.lineno)
    return line
