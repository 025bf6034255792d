"""`synix forget` as a use case: forget a conversation or an export file with everything derived
from it, the memory rebuilt without it by `synix run`'s own build (the forget package below takes
the build as an argument, so it never imports this floor)."""
from __future__ import annotations

from synix_assets.app.run import run_build
from synix_assets.forget import ForgetReport
from synix_assets.forget import forget as forget_with
from synix_assets.project import ProjectPaths


def forget(paths: ProjectPaths, target: str | None = None, dry_run: bool = False, *,
           llm_config: dict | None = None) -> ForgetReport:
    """Forget `target` (a conversation id or an export file path); `dry_run` only lists; no
    target finishes a forget that was interrupted."""
    return forget_with(paths, target, dry_run, llm_config=llm_config, rebuild=run_build)
