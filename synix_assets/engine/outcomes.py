"""What building a layer produced, per partition and in total."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PartitionOutcome:
    group_key: str
    status: str  # built | cached | failed | blocked
    artifact_id: str | None = None
    reason: str = ""
    error: str = ""
    provider: str = ""
    model: str = ""
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    input_count: int = 0
    content_hash: str = ""
    preview: str = ""
    flags: tuple[str, ...] = ()
    # built, but every answer it needed was served by the LLM response cache: a new record (e.g.
    # a prompt reverted to one answered before) that cost no model call. "cached" is different:
    # the record already existed and nothing was done.
    from_response_cache: bool = False



def built_outcome(group_key: str, stored, llm, spend: dict, *, reason: str, input_count: int,
                  preview: str) -> PartitionOutcome:
    """A partition just stored by one step: its record, who made it and what the calls cost."""
    return PartitionOutcome(group_key, "built", artifact_id=stored.artifact_id, reason=reason,
                            provider=llm.provider, model=llm.model, input_count=input_count,
                            llm_calls=spend.get("llm_calls", 0), tokens_in=spend.get("input_tokens", 0),
                            tokens_out=spend.get("output_tokens", 0), cost_usd=spend.get("cost_usd", 0.0),
                            content_hash=stored.content_hash, preview=preview[:600],
                            from_response_cache=spend.get("llm_calls") == 0)  # {}: made without a model

@dataclass
class LayerResult:
    layer: str
    outcomes: list[PartitionOutcome] = field(default_factory=list)
    retired: int = 0
    seconds: float = 0.0
    # group key → what it was built (or kept) without: a failed input below (LayerPlan.partial)
    partial: dict[str, list[str]] = field(default_factory=dict)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> list[PartitionOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def totals(self) -> dict[str, Any]:
        return {"built": self.count("built"), "cached": self.count("cached"),
                "from_response_cache": sum(1 for o in self.outcomes
                                           if o.status == "built" and o.from_response_cache),
                "failed": self.count("failed"), "blocked": self.count("blocked"),
                "partial": len(self.partial),
                "permanent_failures": sum(1 for o in self.failed if "permanent" in o.flags),
                "retired": self.retired,
                "llm_calls": sum(o.llm_calls for o in self.outcomes),
                "tokens_in": sum(o.tokens_in for o in self.outcomes),
                "tokens_out": sum(o.tokens_out for o in self.outcomes),
                "cost_usd": round(sum(o.cost_usd for o in self.outcomes), 6),
                "seconds": round(self.seconds, 3)}


@dataclass
class WorkItem:
    """One partition that must be (re)built, and why."""

    group_key: str
    key: str | None  # materialization key; None when it depends on an upstream not yet built
    reason: str  # new | input changed | prompt/model changed | upstream changed
    inputs: list[str] = field(default_factory=list)
    est_calls: int = 1
    est_tokens_in: int = 0


def rebuild_reason(current, key: str, prompt_changed: bool) -> str | None:
    """None when `current` (the partition's artifact, or None) was built with materialization
    key `key`; otherwise why the partition must be rebuilt."""
    if current is not None and current.materialization_key == key:
        return None
    if current is None:
        return "new"
    return "prompt/model changed" if prompt_changed else "upstream changed"


@dataclass
class LayerPlan:
    layer: str
    kind: str
    stale: list[WorkItem] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    retire: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    # group key → ISO date, for partitions planned but not built yet (lets period plans group them)
    dates: dict[str, str | None] = field(default_factory=dict)
    # (layer, group key) of failure records, of this layer and every layer above it, that no
    # longer hold: the partition is current under the current step version (built or cached),
    # or its input is gone. They block nothing (`upstream.blocked_groups`) and a build drops them.
    lapsed: set[tuple[str, str]] = field(default_factory=set)
    # group key → conversation title, for the same partitions (names their Dagster partition)
    titles: dict[str, str] = field(default_factory=dict)
    # group key → what its output is (or will be) built without ("layer/group key" of a failed
    # or refused partition below): built from what is there, a gap the next build fills once the
    # retried partition succeeds (design §10.2). A partition here is also cached or stale.
    partial: dict[str, list[str]] = field(default_factory=dict)

    @property
    def stale_keys(self) -> list[str]:
        return [w.group_key for w in self.stale]

    def only(self, keys: set[str]) -> "LayerPlan":
        """This plan for the partitions of `keys` alone (nothing retired)."""
        return LayerPlan(self.layer, self.kind, [w for w in self.stale if w.group_key in keys],
                         [k for k in self.cached if k in keys], [],
                         [k for k in self.blocked if k in keys],
                         {k: d for k, d in self.dates.items() if k in keys}, set(self.lapsed),
                         {k: t for k, t in self.titles.items() if k in keys},
                         {k: g for k, g in self.partial.items() if k in keys})

    @property
    def est_calls(self) -> int:
        return sum(w.est_calls for w in self.stale)
