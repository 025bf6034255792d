"""Everything a layer build needs, in one object."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from synix_assets.engine.projections import tighten_context_docs
from synix_assets.project import ProjectPaths
from synix_assets.sources.reader import SourceReader


@dataclass
class BuildContext:
    pipeline: Any  # Pipeline
    store: Any  # ArtifactStore
    llm: Any  # LLMClient
    paths: ProjectPaths
    run_id: str | None = None
    batch: bool = False
    reader: SourceReader | None = None
    # told (layer, outcome) of each partition the moment its LLM answer is stored (work graph)
    on_stored: Callable[[str, Any], None] | None = None
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("synix.build"))

    def __post_init__(self) -> None:
        if self.reader is None:
            self.reader = SourceReader(self.pipeline, self.store)
        tighten_context_docs(self.pipeline)

    @property
    def llm_identity(self) -> str:
        return f"{getattr(self.llm, 'provider', '?')}:{getattr(self.llm, 'model', '?')}"

    def version(self, layer: str) -> str:
        step = self.pipeline.steps[layer]
        # Mechanical steps do not call the LLM, so the provider must not invalidate them.
        identity = "" if step.kind == "merge" else self.llm_identity
        return self.pipeline.version(layer, identity)
