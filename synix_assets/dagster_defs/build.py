"""The entry a project's `definitions.py` imports (written by `synix init`, in every project made
since): `build_defs(project_dir)` compiles the project's definitions (compile.py) with the real
build behind `synix_build_all`. It imports the application layer, so it sits on the contract's
top floor (entry points) though it lives in this package: the name must keep resolving for
projects made by earlier versions."""
from __future__ import annotations

from pathlib import Path

import dagster as dg

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.compile import compile_defs


def build_defs(project_dir: str | Path, **options) -> dg.Definitions:
    """Every branch's definitions (compile.compile_defs's options: resources, sync, branches,
    building_run), their `synix_build_all` jobs running `synix run`'s build."""
    return compile_defs(project_dir, build=run_build, **options)
