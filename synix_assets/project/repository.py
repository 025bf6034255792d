"""The project the repository's own entry points serve (`workspace.yaml`, `dagster … -m
synix_assets.definitions`, `dg` at the root, and the root `dagster.yaml`'s storage): the one named
by SYNIX_PROJECT, else the bundled demo project.

The demo project lives next to the package's folder when that is writable (a source checkout:
`.synix-demo/`), else in `~/.synix/demo`; `synix_assets/definitions.py` creates it on first use.
"""
from __future__ import annotations

import os
from pathlib import Path

from synix_resources.settings import settings

CHECKOUT_DEMO_DIR = Path(__file__).resolve().parents[2] / ".synix-demo"


def repository_project() -> Path:
    chosen = settings().project
    if chosen:
        return Path(chosen).expanduser().resolve()
    return CHECKOUT_DEMO_DIR if os.access(CHECKOUT_DEMO_DIR.parent, os.W_OK) \
        else Path.home() / ".synix" / "demo"
