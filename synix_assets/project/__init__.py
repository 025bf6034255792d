"""A Synix project: a folder with a pipeline.py, its exports and its `.synix/` state.

paths.py names every file of one branch of it (`ProjectPaths`, `find_project`), config.py reads
its deployment settings, scale_config.py its scale.toml (a distributed deployment), branches.py
lists its branches, postgres_setup.py points it at
PostgreSQL. Generated files and callers import the names below from `synix_assets.project`.
"""
from synix_assets.project.config import CONFIG_FILE, project_config
from synix_assets.project.paths import (CURRENT_BRANCH_FILE, MAIN, PIPELINE_FILE, ProjectPaths,
                                        current_branch, find_project)

__all__ = ["CONFIG_FILE", "CURRENT_BRANCH_FILE", "MAIN", "PIPELINE_FILE", "ProjectPaths",
           "current_branch", "find_project", "project_config"]
