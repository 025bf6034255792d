"""A conversation's *reading*, shared by the layers that read each conversation once and replay
all readings into derived records (the loops layer, `engine/procedural.py`; the temporal facts,
`engine/facts.py`): the JSON items its user turns yield, by one model call (the step's prompt,
a JSON answer) or, offline or when the answer is not the JSON asked for, by the layer's rules;
the reading says which (`meta.custom.extractor`)."""
from __future__ import annotations

import json
from collections.abc import Callable

from synix_assets.engine.agent import offline
from synix_assets.engine.llm_step import call_prompt, inherited, make_request, record_of
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, WorkItem, built_outcome
from synix_assets.engine.turns import turn_lines, turns_of
from synix_resources.errors import LLMError, PromptError

NOT_JSON = "rules (the model's answer was not the JSON asked for)"

Rules = Callable[[list[dict]], list[dict]]  # user turns → items
Parse = Callable[[str, list[dict], str], "list[dict] | None"]  # model text, user turns, how → items


def read_stale(ctx, layer: str, step, p: LayerPlan, result: LayerResult,
               read: Callable[[WorkItem, object], PartitionOutcome]) -> None:
    """Read every stale conversation of `p` into `result`; a failed call fails its conversation
    only (recorded, retried by the next build)."""
    todo = [w for w in p.stale if w.inputs]
    arts = {a.artifact_id: a for a in ctx.store.get_many([w.inputs[0] for w in todo])}
    for w in todo:
        try:
            result.outcomes.append(read(w, arts[w.inputs[0]]))
        except (LLMError, PromptError) as err:
            ctx.store.record_failure(ctx.run_id, layer, w.group_key, err.one_line())
            result.outcomes.append(PartitionOutcome(w.group_key, "failed", error=err.one_line()))


def read_one(ctx, layer: str, step, work: WorkItem, transcript, *, field: str, by_rules: Rules,
             parse: Parse, rules_name: str, all_turn_ids: bool = False,
             count_key: str | None = None) -> PartitionOutcome:
    """Store one conversation's reading: `{field: items}`, by the model or `by_rules`
    (`count_key`: a metadata key for the number of items)."""
    turns = turns_of(transcript)
    user = [t for t in turns if t["role"] == "user"]
    spend: dict = {}
    if offline(ctx) or not user:
        items, how = by_rules(user), rules_name
    else:
        req = make_request(ctx, layer, call_prompt(step, turn_lines(user)), [record_of(transcript)],
                           f"{layer}/{work.group_key}", shape="json")
        resp = ctx.llm.complete(req)
        spend = {"llm_calls": 0 if resp.from_cache else 1, "input_tokens": resp.input_tokens,
                 "output_tokens": resp.output_tokens, "cost_usd": resp.cost_usd}
        how = f"model {resp.model}"
        parsed = parse(resp.text, user, how)
        items = parsed if parsed is not None else [dict(i, extractor=NOT_JSON) for i in by_rules(user)]
        how = how if parsed is not None else NOT_JSON
    metadata = inherited(transcript.metadata)
    metadata.update({"meta.step.version_hash": ctx.version(layer), "meta.custom.extractor": how,
                     "meta.custom.turn_ids": [t["turn_id"] for t in (turns if all_turn_ids else user)],
                     "meta.step.provider": ctx.llm.provider, "meta.step.model": ctx.llm.model})
    if count_key:
        metadata[count_key] = len(items)
    content = json.dumps({field: items}, ensure_ascii=False)
    stored = ctx.store.put(layer=layer, group_key=work.group_key, content=content,
                           materialization_key=work.key, level=ctx.pipeline.level(layer),
                           metadata=metadata, audit={"source_ids": [transcript.artifact_id], **spend},
                           parents=[transcript.artifact_id], run_id=ctx.run_id)
    ctx.store.clear_failure(layer, work.group_key)
    return built_outcome(work.group_key, stored, ctx.llm, spend, reason=how, input_count=len(user),
                         preview=content)
