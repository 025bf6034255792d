"""The repository's Dagster entry point (`workspace.yaml`, `dagster … -m synix_assets.definitions`):
`defs` for the project named by SYNIX_PROJECT, else the bundled demo project.

The demo project is created on first use next to this package's folder when that is writable
(a source checkout: `.synix-demo/`), else in `~/.synix/demo`. Projects made by `synix init` have
their own `definitions.py` and do not load this module.
"""
from __future__ import annotations

from pathlib import Path

from synix_assets.app.init import demo_exports, init_project
from synix_assets.dagster_defs.build import build_defs
from synix_assets.project.repository import repository_project
from synix_resources.settings import settings


def _default_project() -> Path:
    project = repository_project()
    if not settings().project and not (project / "pipeline.py").exists():
        init_project(project, exports=demo_exports())
    return project


defs = build_defs(_default_project())
