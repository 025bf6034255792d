"""Inputs larger than the model's context are summarised in parts instead of sent and crashing.

Needs `request.render` and `request.sources`: oversize sources are cut into chunks, each chunk is
summarised with a generic prompt (in parallel, through the same client so retries, limits, cache
and audit apply), and the caller's prompt is re-rendered with the chunk summaries. An aggregate
with more inputs than fit even summarised one by one is reduced in groups before it gets here
(synix_assets/engine/reduction.py).
"""
from __future__ import annotations

import dataclasses
import re
import time
from typing import TYPE_CHECKING

from synix_resources.errors import LLMError
from synix_resources.fingerprints import sha256_text

from .types import LLMRequest, LLMResponse

if TYPE_CHECKING:
    from .base import LLMClient

CHARS_PER_TOKEN = 4  # a deliberately cautious estimate; English averages nearer 4.5
MAX_ROUNDS = 3
MAX_CHUNK_TOKENS = 50_000  # smaller chunks keep chunk summaries specific

CHUNK_TEMPLATE = (
    "Summarise this excerpt (part {part} of {parts} of source {source_id}) in at most {words} "
    "words. Keep names, dates, decisions, open questions and concrete facts; add nothing that "
    "is not in the excerpt.\n\n{text}")
CHUNK_TEMPLATE_HASH = sha256_text(CHUNK_TEMPLATE)


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def prompt_budget(request: LLMRequest, window: int) -> int:
    """Tokens left for the prompt once the answer and the system prompt are reserved."""
    return window - request.max_tokens - estimate_tokens(request.system or "")


def needs_split(request: LLMRequest, window: int) -> bool:
    if estimate_tokens(request.prompt) <= prompt_budget(request, window):
        return False
    if request.render is None or not request.sources:
        raise LLMError(
            f"prompt for {request.label or 'request'} is ~{estimate_tokens(request.prompt)} "
            f"tokens, over the model's budget of {prompt_budget(request, window)}",
            hint="pass sources= and render= so the input can be summarised in parts, or pick a "
                 "model with a larger context window")
    return True


def split_text(text: str, max_tokens: int) -> list[str]:
    """Chunks of at most `max_tokens`, cut at paragraph, then line, then sentence boundaries."""
    max_chars = max(1, max_tokens * CHARS_PER_TOKEN)
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
            continue
        for sentence in re.split(r"(?<=[.!?])\s+|\n", paragraph):
            pieces.extend(sentence[i:i + max_chars] for i in range(0, len(sentence), max_chars))
    chunks: list[str] = []
    current = ""
    for piece in filter(None, (p.strip() for p in pieces)):
        candidate = f"{current}\n\n{piece}" if current else piece
        if len(candidate) <= max_chars:
            current = candidate
        else:
            chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks or [text[:max_chars]]


def _chunk_requests(request: LLMRequest, source_id: str, text: str, chunk_tokens: int,
                    share_tokens: int) -> list[LLMRequest]:
    chunks = split_text(text, chunk_tokens)
    words = max(20, int(share_tokens * 0.75 / len(chunks)))
    return [LLMRequest(
        prompt=CHUNK_TEMPLATE.format(part=i, parts=len(chunks), source_id=source_id,
                                     words=words, text=chunk),
        model=request.model, temperature=request.temperature,
        max_tokens=max(64, min(request.max_tokens, words * 2)),
        label=f"{request.label or 'request'} part {i}/{len(chunks)} of {source_id}",
        sources=((source_id, chunk),), max_words=words, template_hash=CHUNK_TEMPLATE_HASH)
        for i, chunk in enumerate(chunks, 1)]


def complete_in_parts(client: "LLMClient", request: LLMRequest, window: int) -> LLMResponse:
    started = time.monotonic()
    budget = prompt_budget(request, window)
    overhead = estimate_tokens(request.render([(sid, "") for sid, _ in request.sources]))
    available = budget - overhead
    if available < 50 * len(request.sources):
        raise LLMError(f"{request.label or 'request'}: {len(request.sources)} sources cannot fit "
                       f"a {window}-token context even summarised",
                       hint="lower max_tokens, group fewer inputs per step, set "
                            "SYNIX_LLM_CONTEXT_TOKENS if the model's window is larger, or use "
                            "a model with a larger context window")
    chunk_tokens = max(200, min(window // 2, MAX_CHUNK_TOKENS))
    sources = list(request.sources)
    part_responses: list[LLMResponse] = []
    for _ in range(MAX_ROUNDS):
        if sum(estimate_tokens(text) for _, text in sources) <= available:
            break
        share = available // len(sources)
        plan = [(i, _chunk_requests(request, sid, text, chunk_tokens, share))
                for i, (sid, text) in enumerate(sources) if estimate_tokens(text) > share]
        flat = [req for _, reqs in plan for req in reqs]
        results = client.complete_many(flat)
        for result in results:
            if isinstance(result, LLMError):
                raise LLMError(f"map-reduce part failed for {request.label or 'request'}: {result}",
                               status=result.status, hint=result.hint) from result
        it = iter(results)
        for index, reqs in plan:
            summaries = [next(it) for _ in reqs]
            part_responses.extend(summaries)
            sources[index] = (sources[index][0], "\n\n".join(r.text for r in summaries))
    final_prompt = request.render(sources)
    if estimate_tokens(final_prompt) > budget:
        raise LLMError(f"{request.label or 'request'} is still over the context window after "
                       f"{MAX_ROUNDS} rounds of summarising in parts",
                       hint="use a model with a larger context window or fewer inputs per step")
    final = client.complete_single(dataclasses.replace(
        request, prompt=final_prompt, sources=tuple(sources), render=None))
    every = [*part_responses, final]
    return dataclasses.replace(
        final,
        input_tokens=sum(r.input_tokens for r in every),
        output_tokens=sum(r.output_tokens for r in every),
        cache_read_tokens=sum(r.cache_read_tokens for r in every),
        cache_write_tokens=sum(r.cache_write_tokens for r in every),
        cost_usd=round(sum(r.cost_usd for r in every), 8),
        attempts=sum(r.attempts for r in every),
        latency_s=round(time.monotonic() - started, 4),
        map_reduce_parts=len(part_responses),
        part_prompt_hashes=tuple(r.rendered_prompt_hash for r in part_responses),
        from_cache=all(r.from_cache for r in every),  # paid for only if some part was called
        flags=tuple(dict.fromkeys([*final.flags, "map_reduce"])))
