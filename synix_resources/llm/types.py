"""Request and response records shared by every LLM provider.

An `LLMResponse` carries everything the audit trail needs (design §3.9): which template, which
rendered prompt, which provider/model/parameters, what came back, and what it cost.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping, Sequence

from synix_resources.fingerprints import sha256_text

# A render callable turns [(source_id, text), ...] into the full prompt; map-reduce re-renders
# with chunk summaries in place of oversize sources.
RenderFn = Callable[[list[tuple[str, str]]], str]

# v2: structured memory documents for folds and topic headlines for rollups; a new name so every
# step built by v1 rebuilds (the model is part of each step's version and of the cache key).
EXTRACTIVE_MODEL = "extractive-v2"


@dataclass
class LLMRequest:
    prompt: str
    system: str | None = None
    model: str | None = None
    temperature: float = 0.3
    max_tokens: int = 1024
    label: str = ""  # e.g. the conversation id; named in every error message
    sources: Sequence[tuple[str, str]] = ()
    max_words: int | None = None
    template_hash: str = ""
    render: RenderFn | None = None
    # What the answer is for, for a summariser that cannot read the prompt (the offline
    # extractive one): "" prose, "rollup" a summary of several inputs, "memory" a fold's document.
    shape: str = ""
    source_dates: Mapping[str, str] = field(default_factory=dict)  # source id → date or period

    def __post_init__(self) -> None:
        self.sources = tuple((str(sid), str(text)) for sid, text in self.sources)

    @property
    def rendered_prompt_hash(self) -> str:
        return sha256_text(self.prompt)

    @property
    def system_hash(self) -> str:
        return sha256_text(self.system or "")


@dataclass
class LLMResponse:
    text: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    stop_reason: str | None = None
    from_cache: bool = False
    flags: tuple[str, ...] = ()
    rendered_prompt_hash: str = ""
    template_hash: str = ""
    temperature: float | None = None
    max_tokens: int = 0
    map_reduce_parts: int = 0
    # rendered-prompt hashes of the chunk summaries a map-reduced answer was built from
    part_prompt_hashes: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()
    raw: str = ""  # response body as returned by the provider (never headers)
    label: str = ""
    batch: bool = False

    @property
    def refusal(self) -> bool:
        return "refusal" in self.flags

    def audit(self) -> dict:
        """Plain-JSON record of this call for the artifact store (never contains credentials)."""
        record = asdict(self)
        record["flags"] = list(self.flags)
        record["source_ids"] = list(self.source_ids)
        record["part_prompt_hashes"] = list(self.part_prompt_hashes)
        record["prompt_template_hash"] = self.template_hash
        record["raw_response"] = record.pop("raw")
        record["refusal"] = self.refusal
        return record

    def to_json_dict(self) -> dict:
        """Round-trippable form used by the response cache."""
        record = asdict(self)
        record["flags"] = list(self.flags)
        record["source_ids"] = list(self.source_ids)
        record["part_prompt_hashes"] = list(self.part_prompt_hashes)
        return record

    @classmethod
    def from_json_dict(cls, record: dict) -> "LLMResponse":
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in record.items() if k in known}
        values["flags"] = tuple(values.get("flags", ()))
        values["source_ids"] = tuple(values.get("source_ids", ()))
        values["part_prompt_hashes"] = tuple(values.get("part_prompt_hashes", ()))
        return cls(**values)


def with_flags(response: LLMResponse, *extra: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*response.flags, *extra]))


__all__ = ["LLMRequest", "LLMResponse", "RenderFn", "EXTRACTIVE_MODEL", "with_flags"]
