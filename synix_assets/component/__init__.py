"""Synix as a Dagster component: a memory added to an existing `dg` project the Dagster way.

    dg scaffold defs synix_assets.component.SynixMemoryComponent memory

writes `defs/memory/defs.yaml` (the pipeline file, store and model), a starter `pipeline.py` and
an `exports/` folder; `dg list defs` then shows the memory's assets beside the project's own.
`dg` finds the component through the `dagster_dg_cli.registry_modules` entry point in
pyproject.toml, which names this module: every public component class here is listed by
`dg list components`, so it holds the component and nothing else (docs/dagster.md).
"""
from synix_assets.component.memory import SynixMemoryComponent

__all__ = ["SynixMemoryComponent"]
