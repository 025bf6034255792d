"""The repository's Dagster entry point (`workspace.yaml`, `dagster … -m synix_assets.definitions`):
`defs` for the project named by SYNIX_PROJECT, else the bundled demo project.

The demo project is created on first use next to this package's folder when that is writable
(a source checkout: `.synix-demo/`), else in `~/.synix/demo`. Projects made by `synix init` have
their own `definitions.py` and do not load this module.
"""
from __future__ import annotations

import os
from pathlib import Path

from synix_assets.dagster_defs.build import build_defs
from synix_assets.app.init import demo_exports, init_project
from synix_resources.settings import settings

CHECKOUT_DEMO_DIR = Path(__file__).resolve().parents[1] / ".synix-demo"


def _default_project() -> Path:
    chosen = settings().project
    if chosen:
        return Path(chosen).expanduser().resolve()
    demo = CHECKOUT_DEMO_DIR if os.access(CHECKOUT_DEMO_DIR.parent, os.W_OK) \
        else Path.home() / ".synix" / "demo"
    if not (demo / "pipeline.py").exists():
        init_project(demo, exports=demo_exports())
    return demo


defs = build_defs(_default_project())
