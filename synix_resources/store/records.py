"""Value types returned by the artifact store (plain frozen dataclasses, no database handles)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Audit columns, in table order. Unknown audit keys are kept in an `extra` JSON column so a
# round trip never loses what an LLM client chose to record.
AUDIT_FIELDS: tuple[str, ...] = (
    "prompt_template_hash", "rendered_prompt_hash", "provider", "model", "temperature",
    "max_tokens", "raw_response", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "cost_usd", "latency_s", "attempts", "flags",
)


@dataclass(frozen=True)
class Artifact:
    """One stored version of one group's output in one layer."""

    artifact_id: str
    layer: str
    group_key: str
    level: int
    content: str
    content_hash: str
    materialization_key: str
    metadata: dict[str, Any]
    audit: dict[str, Any] | None
    run_id: str | None
    created_at: str
    superseded_at: str | None
    parent_ids: tuple[str, ...] = ()

    @property
    def is_current(self) -> bool:
        return self.superseded_at is None


@dataclass
class LineageNode:
    """An artifact and the lineage trees of its parents, in edge order."""

    artifact: Artifact
    parents: list["LineageNode"] = field(default_factory=list)

    def walk(self):
        """Yield (depth, node) depth-first, parents in edge order."""
        stack = [(0, self)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, p) for p in reversed(node.parents))


@dataclass(frozen=True)
class CurrentRef:
    """What the rebuild planner needs to know about a group's current artifact."""

    artifact_id: str
    materialization_key: str
    content_hash: str
    created_at: str


@dataclass(frozen=True)
class Checkpoint:
    """Accumulated fold state after the first `position` inputs."""

    position: int
    prefix_fingerprint: str
    state: Any


@dataclass(frozen=True)
class Run:
    run_id: str
    pipeline: str
    steps: list[str]
    status: str
    dagster_run_id: str | None
    started_at: str
    finished_at: str | None
    stats: dict[str, Any]
    owner: dict[str, Any] | None = None  # the process running it: pid, host, start time
    branch: str = "main"


@dataclass(frozen=True)
class Failure:
    """The latest failure of one partition (layer, group_key)."""

    run_id: str | None
    layer: str
    group_key: str
    error: str
    recorded_at: str
