"""What a prompt function sees: a read-only view of one input artifact."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Record:
    artifact_id: str
    layer: str
    group_key: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return str(self.metadata.get("meta.chat.title", "") or "")

    @property
    def date(self) -> str:
        return str(self.metadata.get("meta.time.created_at", "") or "")[:10]

    @property
    def period(self) -> str:
        return str(self.metadata.get("meta.time.period", "") or "")
