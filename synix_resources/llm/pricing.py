"""The one per-model price table, used by run accounting and by plan estimates alike.

Prices are USD per million tokens, from platform.claude.com/docs/en/about-claude/pricing and the
per-model overview pages (checked 2026-10). `cache_write` is the 5-minute cache-write rate (the
TTL Synix requests). Anthropic's `input_tokens` already excludes cached tokens, so the four counts
are billed independently. The Message Batches API halves input and output prices.

`accepts_temperature`: Claude Opus/Sonnet 4.7+ (and every 5.x model, Haiku 5.5 included) answer a
non-default `temperature` with a 400, so the Anthropic client omits it for them.
"""
from __future__ import annotations

from dataclasses import dataclass

BATCH_DISCOUNT = 0.5
FREE_PROVIDERS = frozenset({"extractive", "fake"})
# Picks sentences instead of calling a model, so its runs count no tokens while a plan still
# estimates what a model would be sent; both say so (TOKENLESS_NOTE).
TOKENLESS_PROVIDERS = frozenset({"extractive"})
TOKENLESS_NOTE = "the offline extractive summariser calls no model, so it counts no tokens"


@dataclass(frozen=True)
class ModelPrice:
    input: float
    output: float
    cache_write: float
    cache_read: float
    context_window: int = 200_000
    accepts_temperature: bool = True
    known: bool = True


def _claude(inp, out, write, read, context=1_000_000, temperature=False) -> ModelPrice:
    return ModelPrice(inp, out, write, read, context, temperature)


# Keys are model-id prefixes; the longest matching prefix wins, so dated ids
# (claude-haiku-4-5-20251001) resolve to their family row.
PRICES: dict[str, ModelPrice] = {
    "claude-fable-5-1": _claude(10, 50, 12.5, 0.25),
    "claude-mythos-5-1": _claude(10, 50, 12.5, 0.25),
    "claude-fable-5": _claude(10, 50, 12.5, 1.0),
    "claude-mythos-5": _claude(10, 50, 12.5, 1.0),
    "claude-opus-5-5": _claude(4, 20, 5, 0.20),
    "claude-opus-5": _claude(5, 25, 6.25, 0.50),
    "claude-sonnet-5-5": _claude(2, 10, 2.5, 0.20),
    "claude-sonnet-5": _claude(2, 10, 2.5, 0.20),
    # Haiku 5.5 prompts up to 100K tokens; longer prompts cost 5x (see LONG_PROMPT_TIERS).
    "claude-haiku-5-5": _claude(0.10, 0.50, 0.125, 0.01),
    "claude-opus-4-8": _claude(5, 25, 6.25, 0.50),
    "claude-opus-4-7": _claude(5, 25, 6.25, 0.50),
    "claude-opus-4-6": _claude(5, 25, 6.25, 0.50, temperature=True),
    "claude-sonnet-4-6": _claude(3, 15, 3.75, 0.30, temperature=True),
    "claude-opus-4-5": _claude(5, 25, 6.25, 0.50, context=200_000, temperature=True),
    "claude-sonnet-4-5": _claude(3, 15, 3.75, 0.30, context=200_000, temperature=True),
    "claude-haiku-4-5": _claude(1, 5, 1.25, 0.10, context=200_000, temperature=True),
    "claude-opus-4-1": _claude(15, 75, 18.75, 1.50, context=200_000, temperature=True),
    "claude-opus-4": _claude(15, 75, 18.75, 1.50, context=200_000, temperature=True),
    "claude-sonnet-4": _claude(3, 15, 3.75, 0.30, context=200_000, temperature=True),
    "claude-3-5-haiku": _claude(0.80, 4, 1.0, 0.08, context=200_000, temperature=True),
    "claude-3-haiku": _claude(0.25, 1.25, 0.30, 0.03, context=200_000, temperature=True),
    # OpenAI-compatible hosted models quoted in the design doc (§4.8).
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.15, 0.075, 128_000),
    "gpt-4o": ModelPrice(2.50, 10.0, 2.50, 1.25, 128_000),
}

# (threshold prompt tokens, price multiplier above it)
LONG_PROMPT_TIERS: dict[str, tuple[int, float]] = {"claude-haiku-5-5": (100_000, 5.0)}

# Unknown models are priced like a mid-tier Claude model rather than as free, so plans for a
# model missing from this table err on the side of a higher estimate. Unknown Claude ids are
# assumed to reject temperature (every model since 4.7 does).
DEFAULT_PRICE = ModelPrice(3, 15, 3.75, 0.30, 128_000, accepts_temperature=True, known=False)
FREE_PRICE = ModelPrice(0, 0, 0, 0, 10**9, known=True)


def _family(model: str) -> str | None:
    matches = [key for key in PRICES if model == key or model.startswith(key + "-")
               or model.startswith(key + "@") or model.startswith(key + "[")]
    return max(matches, key=len) if matches else None


def price_for(model: str, provider: str | None = None) -> ModelPrice:
    if provider in FREE_PROVIDERS:
        return FREE_PRICE
    family = _family(model or "")
    if family:
        return PRICES[family]
    if (model or "").startswith("claude-"):
        return ModelPrice(**{**DEFAULT_PRICE.__dict__, "accepts_temperature": False})
    return DEFAULT_PRICE


def context_window(model: str, provider: str | None = None) -> int:
    return price_for(model, provider).context_window


def accepts_temperature(model: str) -> bool:
    return price_for(model).accepts_temperature


def estimate_cost(model: str, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0,
                  cache_write_tokens: int = 0, *, batch: bool = False,
                  provider: str | None = None) -> float:
    """USD cost of one call (or of a plan's token totals). Extractive and fake cost nothing."""
    price = price_for(model, provider)
    multiplier = 1.0
    tier = LONG_PROMPT_TIERS.get(_family(model or "") or "")
    prompt_tokens = input_tokens + cache_read_tokens + cache_write_tokens
    if tier and prompt_tokens > tier[0]:
        multiplier = tier[1]
    cost = (input_tokens * price.input + output_tokens * price.output
            + cache_read_tokens * price.cache_read + cache_write_tokens * price.cache_write)
    cost = cost * multiplier / 1_000_000
    if batch:
        cost *= BATCH_DISCOUNT
    return round(cost, 8)
