"""Which Synix project a component's defs.yaml names: the pipeline file, the folder of its state
and its store, written where every Synix command reads them (`.synix/config.toml`), so `synix
run -p <folder>`, `synix search` and the component's assets all read one memory."""
from __future__ import annotations

from pathlib import Path

from synix_assets.project import PIPELINE_FILE, project_config
from synix_assets.project.config import CODE_LOCATION, set_project_config
from synix_assets.project.postgres_setup import check_postgres_url
from synix_assets.python_api.project import register
from synix_resources.errors import ProjectNotFound


def bind_project(pipeline: Path, project: Path | None, store: str | None,
                 location: str | None = None) -> Path:
    """The project folder (default: the pipeline's), after recording there the pipeline file
    when it is not the folder's own pipeline.py, the store when one is named, and the code
    location of the `dg` project serving the memory (`location`): the runs a build launches
    carry it, so that project's UI re-executes them (dagster_defs/origin.py)."""
    pipeline = pipeline.resolve()
    if not pipeline.is_file():
        raise ProjectNotFound(f"the memory's pipeline file {pipeline} does not exist",
                              hint="set `pipeline:` in the component's defs.yaml to a pipeline "
                                   "file relative to it, e.g. pipeline.py (`dg scaffold defs` "
                                   "writes a starter one)")
    root = (project or pipeline.parent).resolve()
    root.mkdir(parents=True, exist_ok=True)
    if pipeline != root / PIPELINE_FILE or project_config(root).get("pipeline"):
        register(root, pipeline)  # a no-op when config.toml already names it
    if store is not None and project_config(root).get("store") != store:
        set_project_config(root, "store", check_postgres_url(store, "store:"))
    if location and project_config(root).get(CODE_LOCATION) != location:
        set_project_config(root, CODE_LOCATION, location)
    return root
