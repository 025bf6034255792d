"""A Synix project: a folder with a pipeline.py, its exports and its `.synix/` state."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from synix_resources.errors import ProjectNotFound

PIPELINE_FILE = "pipeline.py"


@dataclass(frozen=True)
class ProjectPaths:
    root: Path

    @property
    def pipeline_file(self) -> Path:
        return self.root / PIPELINE_FILE

    @property
    def state_dir(self) -> Path:
        return self.root / ".synix"

    @property
    def store(self) -> Path:
        return Path(os.environ["SYNIX_STORE_PATH"]) if os.environ.get("SYNIX_STORE_PATH") \
            else self.state_dir / "synix.db"

    @property
    def search(self) -> Path:
        return self.state_dir / "search.db"

    @property
    def llm_cache(self) -> Path:
        return self.state_dir / "llm_cache.db"

    @property
    def internal(self) -> Path:
        return self.state_dir / "internal"

    @property
    def dagster_home(self) -> Path:
        return self.state_dir / "dagster"

    @property
    def lock(self) -> Path:
        return self.state_dir / "build.lock"


def find_project(start: str | Path | None = None) -> ProjectPaths:
    """The project containing `start` (default: the current directory), searching upwards."""
    here = Path(start).expanduser().resolve() if start else Path.cwd().resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / PIPELINE_FILE).is_file():
            return ProjectPaths(folder)
    raise ProjectNotFound(
        f"no {PIPELINE_FILE} in {here} or its parents",
        hint="run `synix init DIR --from EXPORT` to create a project, or pass -p/--project DIR")
