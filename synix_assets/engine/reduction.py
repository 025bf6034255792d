"""Hierarchical reduction: an aggregate whose inputs do not fit the model's context window.

A month of 180 episodes does not fit an 8,192-token local model however short each summary is
made. So the inputs (in the aggregate's order) are packed into groups that fit the window, each
group is summarised by one LLM call with a generic prompt (below), the summaries take their
groups' place, and the step's own prompt is tried again — level after level until it fits.

Every intermediate summary is
- an artifact of the companion layer `<layer>.parts` (group key `<group>/<level>.<n>`; pipeline
  layer names cannot contain a dot), stored the moment it arrives, with provenance edges to what
  it summarised; the final artifact has edges to the top-level summaries and, as every
  aggregate does, to its inputs (the search index and forget walk those), so `synix lineage`
  and `synix get` show the whole tree and forget reaches every intermediate;
- a call through the response cache: a rebuild whose groups are unchanged makes no calls;
- listed in the final artifact's audit (`reduction`: the ids each summary covered).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from synix_assets.engine.llm_step import PendingCall, make_request, store_result
from synix_assets.engine.outcomes import PartitionOutcome
from synix_assets.pipeline.records import Record
from synix_resources.errors import LLMError, SynixError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.llm.mapreduce import estimate_tokens, prompt_budget
from synix_resources.llm.types import LLMRequest, LLMResponse

PARTS_SUFFIX = ".parts"
MAX_LEVELS = 8
MIN_WORDS = 40  # below this a summary keeps too little; the next level reduces further instead
MAX_WORDS = 300

GROUP_TEMPLATE = (
    "Summarise these {n} {kind} of {scope} ({span}) into one summary of at most {words} words. "
    "Keep names, dates, decisions, open questions and concrete facts, and how things changed "
    "over time; add nothing that is not in them.\n\n{items}")
GROUP_TEMPLATE_HASH = sha256_text(GROUP_TEMPLATE)

PromptOf = Callable[[list[Record]], str]  # the step's prompt over a list of records


def parts_layer(layer: str) -> str:
    return f"{layer}{PARTS_SUFFIX}"


def _item(record: Record, text: str) -> str:
    return f'<item date="{record.date}" title="{record.title}">\n{text}\n</item>'


def _span(records: list[Record]) -> tuple[str | None, str | None]:
    starts = [str(r.metadata.get("meta.time.created_at") or "") for r in records]
    ends = [str(r.metadata.get("meta.time.last_at") or r.metadata.get("meta.time.created_at") or "")
            for r in records]
    starts, ends = [s for s in starts if s], [e for e in ends if e]
    return (min(starts) if starts else None), (max(ends) if ends else None)


def _span_text(records: list[Record]) -> str:
    first, last = _span(records)
    if not first:
        return "undated"
    return first[:10] if first[:10] == (last or first)[:10] else f"{first[:10]} to {last[:10]}"


def _records_render(prompt_of: PromptOf, records: list[Record]):
    """A render for map-reduce: the prompt with some records' text replaced by summaries."""
    def render(sources: list[tuple[str, str]]) -> str:
        by_id = dict(sources)
        return prompt_of([Record(r.artifact_id, r.layer, r.group_key,
                                 by_id.get(r.artifact_id, r.content), r.metadata)
                          for r in records])
    return render


@dataclass
class _Reduction:
    """One partition being reduced: its current records and what each level produced."""

    call: PendingCall
    records: list[Record]
    prompt_of: PromptOf
    window: int
    level: int = 0
    error: SynixError | None = None  # an LLM failure, or the step's prompt failing
    groups: list[list[Record]] = field(default_factory=list)
    summaries: list[Record | None] = field(default_factory=list)
    audit: list[dict] = field(default_factory=list)
    responses: list[LLMResponse] = field(default_factory=list)

    @property
    def group(self) -> str:
        return self.call.group_key

    def fits(self) -> bool:
        request = self.call.request
        prompt = self.prompt_of(self.records)
        return estimate_tokens(prompt) <= prompt_budget(request, self.window)


class _Reducer:
    def __init__(self, ctx, layer: str, level: int):
        self.ctx = ctx
        self.layer = layer
        self.level = level  # the aggregate's level; its intermediates share it
        self.step = ctx.pipeline.steps[layer]

    def kind(self, red: "_Reduction") -> str:
        return self.step.upstream if red.level <= 1 else "partial summaries"

    # sizes -----------------------------------------------------------------------------------
    @staticmethod
    def group_out_tokens(window: int) -> int:
        return max(64, min(1024, window // 8))

    def scope(self, red: _Reduction) -> str:
        return f"{self.layer} {red.group}"

    def pack(self, red: _Reduction) -> list[list[Record]]:
        """Consecutive records, as many per group as fit one summary request."""
        empty = GROUP_TEMPLATE.format(n=len(red.records), kind=self.kind(red),
                                      scope=self.scope(red), span="x" * 24, words=MAX_WORDS,
                                      items="")
        budget = red.window - self.group_out_tokens(red.window) - estimate_tokens(empty)
        groups: list[list[Record]] = []
        current: list[Record] = []
        used = 0
        for record in red.records:
            cost = estimate_tokens(_item(record, record.content)) + 1
            if current and used + cost > budget:
                groups.append(current)
                current, used = [], 0
            current.append(record)
            used += cost
        if current:
            groups.append(current)
        return groups

    def placeholder(self) -> Record:
        """An empty summary record of typical shape, for measuring the step's prompt."""
        return Record("", parts_layer(self.layer), "", "",
                      {"meta.time.created_at": "2000-01-01T00:00:00Z", "meta.chat.title": "x" * 48})

    def hopeless(self, red: _Reduction) -> LLMError | None:
        """An error if even one short summary cannot fit: no number of levels would help."""
        one = estimate_tokens(red.prompt_of([self.placeholder()])) + MIN_WORDS * 2
        budget = prompt_budget(red.call.request, red.window)
        if one <= budget:
            return None
        return LLMError(
            f"{self.layer}/{red.group}: the step's prompt needs ~{one} tokens even over one short "
            f"summary, but a {red.window}-token context leaves {budget} after max_tokens "
            f"{red.call.request.max_tokens}", hint="lower the step's max_tokens or raise "
            "SYNIX_LLM_CONTEXT_TOKENS if the model allows it")

    def words_for(self, red: _Reduction, groups: list[list[Record]]) -> int:
        """Words per summary so that the summaries together fit the step's own prompt.

        Measured with placeholder records of a fixed shape, and rounded, so it depends on the
        number of groups and the window only: adding an input to the last group must not
        change the other groups' prompts (they are then answered from the response cache)."""
        overhead = estimate_tokens(red.prompt_of([self.placeholder()] * len(groups)))
        room = prompt_budget(red.call.request, red.window) - overhead
        per_summary = room / max(1, len(groups))
        ceiling = min(MAX_WORDS, int(self.group_out_tokens(red.window) * 0.6))
        words = max(MIN_WORDS, min(ceiling, int(per_summary * 0.6)))
        return words - words % 10

    # requests and artifacts --------------------------------------------------------------------
    def group_request(self, red: _Reduction, index: int, group: list[Record],
                      words: int) -> LLMRequest:
        settings = self.ctx.pipeline.llm_settings(self.step)
        scope = self.scope(red)

        def render(sources: list[tuple[str, str]], group=group) -> str:
            by_id = dict(sources)
            return GROUP_TEMPLATE.format(
                n=len(group), kind=self.kind(red), scope=scope, span=_span_text(group), words=words,
                items="\n\n".join(_item(r, by_id.get(r.artifact_id, r.content)) for r in group))

        sources = [(r.artifact_id, r.content) for r in group]
        return LLMRequest(
            prompt=render(sources), model=settings["model"], temperature=settings["temperature"],
            max_tokens=min(self.group_out_tokens(red.window), max(64, words * 2)),
            label=f"{self.layer}/{red.group} reduce {red.level}.{index}", sources=sources,
            max_words=words, template_hash=GROUP_TEMPLATE_HASH, render=render)

    def summary_record(self, red: _Reduction, index: int, group: list[Record], artifact_id: str,
                       text: str) -> Record:
        first, last = _span(group)
        return Record(artifact_id, parts_layer(self.layer), f"{red.group}/{red.level}.{index}",
                      text, self.summary_metadata(red, group, first, last))

    def summary_metadata(self, red: _Reduction, group: list[Record], first, last) -> dict:
        # What every input of the group agrees on (e.g. its source type) still holds.
        common = {k: v for k, v in group[0].metadata.items()
                  if all(r.metadata.get(k) == v for r in group[1:])}
        return {**common, "meta.time.created_at": first, "meta.time.last_at": last,
                "meta.chat.title": f"summary of {len(group)} {self.kind(red)}, {_span_text(group)}",
                "meta.chat.conversation_count": sum(
                    int(r.metadata.get("meta.chat.conversation_count") or 1) for r in group)}

    def store_summary(self, red: _Reduction, index: int, response: LLMResponse) -> Record:
        group = red.groups[index - 1]
        group_key = f"{red.group}/{red.level}.{index}"
        first, last = _span(group)
        metadata = {**self.summary_metadata(red, group, first, last),
                    "meta.custom.reduction": {"layer": self.layer, "group": red.group,
                                              "level": red.level, "index": index,
                                              "inputs": len(group)},
                    "meta.step.provider": response.provider, "meta.step.model": response.model,
                    "meta.step.version_hash": self.ctx.version(self.layer)}
        key = sha256_text(canonical_json(["reduce", self.layer, group_key,
                                          response.rendered_prompt_hash,
                                          self.ctx.version(self.layer)]))
        audit = response.audit()
        audit["reduction_level"] = red.level
        art = self.ctx.store.put(layer=parts_layer(self.layer), group_key=group_key,
                                 content=response.text, materialization_key=key, level=self.level,
                                 metadata=metadata, audit=audit,
                                 parents=[r.artifact_id for r in group], run_id=self.ctx.run_id)
        red.audit.append({"artifact_id": art.artifact_id, "level": red.level, "index": index,
                          "inputs": [r.artifact_id for r in group],
                          "rendered_prompt_hash": response.rendered_prompt_hash,
                          "from_cache": response.from_cache})
        red.responses.append(response)
        return self.summary_record(red, index, group, art.artifact_id, response.text)

    # levels ----------------------------------------------------------------------------------
    def run_level(self, active: list[_Reduction]) -> None:
        """One level for every partition still too large: pack, summarise (concurrently, each
        summary stored as it arrives), then put the summaries in place of their groups."""
        slots: list[tuple[_Reduction, int]] = []
        requests: list[LLMRequest] = []
        for red in active:
            red.level += 1
            red.groups = self.pack(red)
            if len(red.groups) == len(red.records) and red.level > 1:
                red.error = self.no_progress(red)
                continue
            words = _attempt(red, lambda red=red: self.words_for(red, red.groups))
            if words is None:
                continue
            red.summaries = [None] * len(red.groups)
            for index, group in enumerate(red.groups, 1):
                slots.append((red, index))
                requests.append(self.group_request(red, index, group, words))

        def arrived(i: int, result) -> None:
            red, index = slots[i]
            if isinstance(result, LLMError):
                red.error = red.error or LLMError(
                    f"{self.layer}/{red.group}: summarising group {red.level}.{index} of its "
                    f"inputs failed: {result}", status=result.status, hint=result.hint)
                return
            red.summaries[index - 1] = self.store_summary(red, index, result)

        if requests:
            self.ctx.llm.complete_many(requests, batch=self.ctx.batch, on_result=arrived)
        for red in active:
            if red.error is None:
                red.records = [s for s in red.summaries if s is not None]

    def no_progress(self, red: _Reduction) -> LLMError:
        return LLMError(
            f"{self.layer}/{red.group}: {len(red.records)} summaries of its inputs still do not "
            f"fit a {red.window}-token context", hint="raise SYNIX_LLM_CONTEXT_TOKENS if the "
            "model allows it, or lower the step's max_tokens")

    def finish(self, red: _Reduction) -> PendingCall:
        """The partition's call over the reduced records, with the reduction's cost and trail."""
        call = red.call
        request = make_request(self.ctx, self.layer, red.prompt_of(red.records), red.records,
                               call.request.label, _records_render(red.prompt_of, red.records))
        top = [r.artifact_id for r in red.records]
        called = [r for r in red.responses if not r.from_cache]
        extra = dict(call.extra_audit)
        extra.update({
            "reduction": {"levels": red.level, "window": red.window, "summaries": red.audit},
            "extra_calls": int(extra.get("extra_calls", 0)) + len(called),
            "extra_tokens_in": int(extra.get("extra_tokens_in", 0))
            + sum(r.input_tokens for r in red.responses),
            "extra_tokens_out": int(extra.get("extra_tokens_out", 0))
            + sum(r.output_tokens for r in red.responses),
            "extra_cost_usd": float(extra.get("extra_cost_usd", 0.0))
            + sum(r.cost_usd for r in red.responses)})
        # Edges to the summaries (the prompt read them) and to the inputs (the metadata, dates
        # and PII counts come from them directly; the search index and forget walk them).
        return PendingCall(call.group_key, request, list(dict.fromkeys([*top, *call.parents])),
                           call.metadata, call.key, call.input_count, extra)


def _attempt(red: _Reduction, step: Callable):
    """step(), or None with red.error set: the step's prompt, rendered over summaries instead
    of its inputs, may fail (a PromptError); that fails this partition only."""
    try:
        return step()
    except SynixError as err:
        red.error = red.error or err
        return None


def _failed(ctx, layer: str, level: int, red: _Reduction) -> PartitionOutcome:
    if isinstance(red.error, LLMError):
        return store_result(ctx, layer, level, red.call, red.error)
    ctx.store.record_failure(ctx.run_id, layer, red.group, red.error.one_line())
    return PartitionOutcome(red.group, "failed", error=red.error.one_line(),
                            input_count=red.call.input_count)


def fit_to_window(ctx, layer: str, level: int,
                  items: list[tuple[PendingCall, list[Record], PromptOf]],
                  ) -> tuple[list[PendingCall], list[PartitionOutcome]]:
    """Calls that fit the model's window as they are, the others reduced hierarchically first;
    partitions whose reduction failed come back as failed outcomes (recorded as failures)."""
    reducer = _Reducer(ctx, layer, level)
    ready: list[PendingCall] = []
    reductions: list[_Reduction] = []
    for call, records, prompt_of in items:
        window = ctx.llm.context_window_for(ctx.llm.model_for(call.request))
        red = _Reduction(call, records, prompt_of, window or 0)
        if not window or estimate_tokens(call.request.prompt) <= prompt_budget(call.request, window):
            ready.append(call)
        else:
            hopeless = _attempt(red, lambda red=red: reducer.hopeless(red))
            red.error = red.error or hopeless
            reductions.append(red)

    def unfinished(red: _Reduction) -> bool:
        return red.error is None and _attempt(red, red.fits) is False

    active = [r for r in reductions if r.error is None]
    while active:
        reducer.run_level(active)
        for red in active:
            if unfinished(red) and red.level >= MAX_LEVELS:
                red.error = reducer.no_progress(red)
        active = [r for r in active if unfinished(r)]
    failed: list[PartitionOutcome] = []
    for red in reductions:
        call = None if red.error is not None else _attempt(red, lambda red=red: reducer.finish(red))
        if call is None:
            failed.append(_failed(ctx, layer, level, red))
        else:
            ready.append(call)
    # Summaries of an earlier, larger version of a group are history now, not current.
    produced = {f"{red.group}/{a['level']}.{a['index']}" for red in reductions for a in red.audit
                if red.error is None}
    retire_parts(ctx, layer, [c.group_key for c in ready], keep=produced)
    return ready, failed


def retire_parts(ctx, layer: str, groups, keep: set[str] = frozenset()) -> int:
    """Supersede the intermediate summaries of these groups, except those in `keep`."""
    prefixes = tuple(f"{g}/" for g in groups)
    if not prefixes:
        return 0
    stale = [k for k in ctx.store.current_index(parts_layer(layer))
             if k.startswith(prefixes) and k not in keep]
    return ctx.store.retire(parts_layer(layer), stale) if stale else 0
