"""`SynixMemoryComponent`: a Synix project's definitions inside a user's `dg` project.

`build_defs` binds the defs.yaml's attributes to a Synix project folder (its `.synix/` state) and
then compiles it with the same entry every `synix init` project's definitions.py calls
(`dagster_defs.build.build_defs`), so the assets, checks, jobs and sensors are exactly those of
`synix ui` / `dagster dev` in a Synix project — there is no second compiler.
"""
from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from synix_assets.component.scaffold import MemoryScaffolder


@dg.scaffold_with(MemoryScaffolder)
class SynixMemoryComponent(dg.Component, dg.Model, dg.Resolvable):
    """A Synix memory built from chat exports: episodes, rollups, a core memory (context.md)
    and a search index, each traced to its source messages."""

    pipeline: str = Field(
        default="pipeline.py",
        description="The pipeline file (Python), relative to this defs.yaml's folder.")
    project: str | None = Field(
        default=None,
        description="The folder holding the memory's state (.synix/: store, LLM cache, build "
                    "lock) and against which the pipeline's relative paths resolve; relative to "
                    "this defs.yaml's folder. Default: the pipeline file's folder.")
    store: str | None = Field(
        default=None,
        description="A PostgreSQL URL for the artifact store (postgresql://USER@HOST/DB); "
                    "default: SQLite in the project's .synix/synix.db.")
    llm_provider: str | None = Field(
        default=None,
        description="The LLM provider: anthropic, openai-compatible, extractive or fake. "
                    "Default: anthropic when ANTHROPIC_API_KEY is set, else the offline "
                    "extractive summariser. SYNIX_LLM_PROVIDER, when set, wins.")
    llm_model: str | None = Field(
        default=None,
        description="The provider's model, e.g. claude-sonnet-4-6. SYNIX_LLM_MODEL, when set, wins.")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        # Imported here: `dg list components` imports this module to list the component, and
        # the compiler brings the whole build with it.
        from synix_assets.component.binding import bind_project
        from synix_assets.dagster_defs.build import build_defs

        here = Path(context.path)
        root = bind_project(here / self.pipeline,
                            here / self.project if self.project else None, self.store,
                            context.component_tree.code_location_name)
        _llm_defaults(self.llm_provider, self.llm_model)
        return build_defs(root)


# what this module set in os.environ, so a reload with another defs.yaml value replaces it
_set_here: dict[str, str] = {}


def _llm_defaults(provider: str | None, model: str | None) -> None:
    """Synix reads the LLM's provider and model from the environment in every process that
    builds (the code server, each run worker, the runs `synix_build_all` launches), and each of
    them loads this component first: so its values are set there, as defaults — a variable the
    environment already set wins, as it wins over `LLMResource`'s fields."""
    for name, value in (("SYNIX_LLM_PROVIDER", provider), ("SYNIX_LLM_MODEL", model)):
        current = os.environ.get(name)
        if current is not None and _set_here.get(name) != current:
            continue  # the environment's own
        if value:
            os.environ[name] = _set_here[name] = value
        elif current is not None:  # set by an earlier load, since removed from defs.yaml
            del os.environ[name]
            del _set_here[name]
