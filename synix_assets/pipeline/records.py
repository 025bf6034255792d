"""`Record`: one piece of content the memory holds (the design's §3.2), as prompt functions see
their inputs and as `pipeline.get(id)` and search hits return it.

A prompt sees a record's content and metadata (the reserved `meta.*` keys of §3.4); a record read
from a project also carries its provenance (`sources`: parent ids), materialization key, run,
creation time and audit, and walks its lineage through the project it was read from.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from synix_resources.errors import ArtifactNotFound

if TYPE_CHECKING:  # the reader above this floor that gives a read record its lineage
    from synix_assets.python_api.reading import Lineage


@dataclass(frozen=True)
class Record:
    artifact_id: str
    layer: str
    group_key: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    branch: str = "main"
    sources: tuple[str, ...] = ()
    materialization_key: str = ""
    run_id: str | None = None
    created_at: str = ""
    audit: dict[str, Any] | None = None
    embedding: list[float] | None = None
    level: int = 0
    # How this record's lineage is read (set when it was read from a project).
    _lineage: Callable[[str], Lineage] | None = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> str:
        return self.artifact_id

    @property
    def step(self) -> str:
        """The step (layer) that produced this record."""
        return self.layer

    @property
    def source_count(self) -> int:
        return len(self.sources)

    @property
    def title(self) -> str:
        return str(self.metadata.get("meta.chat.title", "") or "")

    @property
    def date(self) -> str:
        return str(self.metadata.get("meta.time.created_at", "") or "")[:10]

    @property
    def period(self) -> str:
        return str(self.metadata.get("meta.time.period", "") or "")

    def __repr__(self) -> str:
        title = f" {self.title!r}" if self.title else ""
        return f"Record({self.layer}:{self.artifact_id[:12]}{title})"

    def lineage(self) -> Lineage:
        """The provenance tree under this record, down to the source transcripts (a `Lineage`:
        `.record`, `.parents`, `.leaves()`, `.walk()`)."""
        if self._lineage is None:
            raise ArtifactNotFound(f"record {self.artifact_id} was not read from a project, so it has no lineage",
                                   hint="read it with pipeline.get(id) or from pipeline.search(...)")
        return self._lineage(self.artifact_id)
