"""Token usage and cost as Dagster metadata, under the names Dagster's own LLM integrations use.

dagster-anthropic (community-integrations, `with_usage_metadata`) records `anthropic.calls`,
`anthropic.input_tokens` and `anthropic.output_tokens` on the materialization of the asset whose
step called the model; dagster-openai records `openai.calls`, `openai.prompt_tokens`,
`openai.completion_tokens` and `openai.total_tokens`. Synix uses the same keys, prefixed with the
provider that answered (`fake.` in tests), so a Dagster user finds them where those integrations
put them and Dagster+ Insights (custom metrics: any numeric materialization metadata key) charts
them next to theirs. Neither integration prices a call; Synix does (`synix_resources/llm/pricing`),
so `<provider>.cost_usd` is added under the same prefix.

Only a materialization whose build called a model carries them: a partition that was already
current, or whose answers the LLM response cache served, cost nothing and says so by their
absence (its `cache` entry says why); the extractive summariser is not a model.
"""
from __future__ import annotations

NOT_A_MODEL = frozenset({"", "extractive"})
# Synix's OpenAI-compatible client speaks OpenAI's API, so it is counted as dagster-openai does.
OPENAI_COMPATIBLE = "openai-compatible"


def usage_metadata(provider: str, calls: int, tokens_in: int, tokens_out: int,
                   cost_usd: float) -> dict:
    """The usage entries of one materialization (or one run's sum); {} when no model was called."""
    if calls <= 0 or provider in NOT_A_MODEL:
        return {}
    if provider == OPENAI_COMPATIBLE:
        return {"openai.calls": calls, "openai.prompt_tokens": tokens_in,
                "openai.completion_tokens": tokens_out, "openai.total_tokens": tokens_in + tokens_out,
                "openai.cost_usd": float(cost_usd)}
    return {f"{provider}.calls": calls, f"{provider}.input_tokens": tokens_in,
            f"{provider}.output_tokens": tokens_out, f"{provider}.cost_usd": float(cost_usd)}


def outcome_usage(outcome) -> dict:
    """What building one partition (an `engine.outcomes.PartitionOutcome`) cost."""
    return usage_metadata(outcome.provider, outcome.llm_calls, outcome.tokens_in, outcome.tokens_out,
                          outcome.cost_usd)


def totals_usage(provider: str, totals: dict) -> dict:
    """What a run (or a layer's part of it) cost, from totals shaped like `LayerResult.totals()`."""
    return usage_metadata(provider, int(totals.get("llm_calls", 0)), int(totals.get("tokens_in", 0)),
                          int(totals.get("tokens_out", 0)), float(totals.get("cost_usd", 0.0)))
