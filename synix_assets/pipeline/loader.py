"""Load a user's pipeline.py into a validated Pipeline."""
from __future__ import annotations

import runpy
import traceback
from pathlib import Path

from synix_assets.engine import interrupts
from synix_assets.pipeline.api import Pipeline
from synix_resources.errors import PipelineDefinitionError, SynixError


def load_pipeline(path: str | Path, *, base_dir: str | Path | None = None) -> Pipeline:
    """Run the file and return its module-level `pipeline`; relative paths resolve next to it,
    or against `base_dir` (a branch's pipeline file lives under .synix/ but reads the
    project's exports)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise PipelineDefinitionError(f"pipeline file {path} does not exist",
                                      hint="run `synix init DIR` to create one")
    try:
        namespace = runpy.run_path(str(path), run_name="__synix_pipeline__")
    except SyntaxError as exc:
        raise PipelineDefinitionError(
            f"{path}:{exc.lineno}: syntax error: {exc.msg}", hint="fix the line and run again") from None
    except SynixError:
        raise
    except SystemExit as exc:  # would end `synix` silently, with status 0 and nothing built
        raise PipelineDefinitionError(
            f"{path}:{_user_frame(exc, path)}: the pipeline file called sys.exit({exc.code!r}) while loading",
            hint="a pipeline file must only define `pipeline = Pipeline(...)`; remove the exit") from None
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
    pipeline = namespace.get("pipeline")
    if not isinstance(pipeline, Pipeline):
        raise PipelineDefinitionError(
            f"{path} defines no `pipeline = Pipeline(...)` at module level",
            hint="see `synix init` for a working example")
    if base_dir is not None:
        pipeline.base_dir = Path(base_dir).resolve()
    elif pipeline.base_dir is None:
        pipeline.base_dir = path.parent
    return pipeline.validate()


def _user_frame(exc: BaseException, path: Path) -> str:
    line = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path:
            line = str(frame.lineno)
    return line
