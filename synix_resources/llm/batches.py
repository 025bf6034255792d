"""Anthropic Message Batches for large backfills: half price, results within 24 hours.

The batch id and the custom_id → request mapping are written to the response cache db as soon
as the batch is created, so a restarted process finds the open batch for the same requests and
resumes polling instead of paying for a second submission.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from synix_resources.errors import LLMError, LLMRefusal
from synix_resources.fingerprints import sha256_text

from . import mapreduce
from .cache import cache_key
from .types import LLMRequest, LLMResponse

if TYPE_CHECKING:
    from .anthropic_client import AnthropicClient

log = logging.getLogger("synix.llm")


def _keys(client: "AnthropicClient", requests: list[LLMRequest]) -> list[str]:
    return [cache_key(r, client.provider, client.model_for(r)) for r in requests]


def custom_id(index: int, key: str) -> str:
    return f"r{index}-{key[:24]}"  # the API allows ^[a-zA-Z0-9_-]{1,64}$


def fingerprint(keys: list[str]) -> str:
    return sha256_text("\n".join(keys))


def _retrying(client: "AnthropicClient", fn, label: str):
    result, _ = client.retry.run(lambda attempt: client.sdk_call(fn, label), label=label,
                                 provider=client.provider)
    return result


def submit(client: "AnthropicClient", requests: list[LLMRequest]) -> str:
    keys = _keys(client, requests)
    fp = fingerprint(keys)
    if client.cache is not None and (existing := client.cache.open_batch(fp)):
        log.info("resuming Message Batch %s for %d requests", existing, len(requests))
        return existing
    items = [{"custom_id": custom_id(i, key), "params": client.params(r, client.model_for(r))}
             for i, (r, key) in enumerate(zip(requests, keys))]
    batch = _retrying(client, lambda: client.sdk.messages.batches.create(requests=items),
                      f"batch of {len(requests)}")
    if client.cache is not None:
        client.cache.record_batch(batch.id, fp, client.provider, client.model,
                                  [(item["custom_id"], key, r.label)
                                   for item, key, r in zip(items, keys, requests)])
    else:
        log.warning("Message Batch %s is not persisted (no cache_path); a restart cannot "
                    "resume it", batch.id)
    log.info("submitted Message Batch %s with %d requests", batch.id, len(requests))
    return batch.id


def poll(client: "AnthropicClient", batch_id: str) -> str:
    batch = _retrying(client, lambda: client.sdk.messages.batches.retrieve(batch_id),
                      f"batch {batch_id}")
    return batch.processing_status


def wait(client: "AnthropicClient", batch_id: str) -> None:
    deadline = time.monotonic() + client.max_batch_wait_s
    while (status := poll(client, batch_id)) != "ended":
        if time.monotonic() > deadline:
            raise LLMError(f"Message Batch {batch_id} is still {status}",
                           hint="rerun the build later: it resumes polling this batch")
        client.poll_sleep(client.poll_interval_s)


def _item_error(label: str, result) -> LLMError:
    if result.type == "errored":
        error = result.error.error
        return LLMError(f"batch item {label} errored: {error.type}: {error.message}",
                        status=400 if error.type == "invalid_request_error" else None,
                        retryable=error.type != "invalid_request_error",
                        hint="fix the input and rebuild; other items were kept")
    return LLMError(f"batch item {label} was {result.type}", retryable=True,
                    hint="rebuild to submit it again")


def collect(client: "AnthropicClient", batch_id: str,
            requests: list[LLMRequest]) -> list[LLMResponse | LLMError]:
    keys = _keys(client, requests)
    slot_of = {custom_id(i, key): i for i, key in enumerate(keys)}
    out: list[LLMResponse | LLMError | None] = [None] * len(requests)
    started = time.monotonic()
    entries = _retrying(client, lambda: list(client.sdk.messages.batches.results(batch_id)),
                        f"batch {batch_id} results")
    for entry in entries:
        index = slot_of.get(entry.custom_id)
        if index is None:
            log.warning("Message Batch %s returned unknown custom_id %s", batch_id, entry.custom_id)
            continue
        request = requests[index]
        model = client.model_for(request)
        if entry.result.type != "succeeded":
            out[index] = _item_error(request.label or entry.custom_id, entry.result)
            continue
        response = client.response_from(request, model,
                                        client.completion_from(entry.result.message, model),
                                        attempts=1, latency_s=time.monotonic() - started,
                                        batch=True)
        try:
            client.check_output(request, response)
        except LLMRefusal as err:
            out[index] = err
            continue
        if client.cache is not None:
            client.cache.put(keys[index], request, response)
        out[index] = response
    for index, value in enumerate(out):
        if value is None:
            out[index] = LLMError(f"Message Batch {batch_id} has no result for "
                                  f"{requests[index].label or index}", retryable=True,
                                  hint="rebuild to submit it again")
    if client.cache is not None:
        client.cache.mark_batch(batch_id, "collected")
    return out


def run(client: "AnthropicClient", requests: list[LLMRequest]) -> list[LLMResponse | LLMError]:
    """Submit (or resume), wait, collect. Oversize inputs go through map-reduce directly."""
    oversize = []
    for i, r in enumerate(requests):
        window = client.context_window_for(client.model_for(r))
        try:
            if window and mapreduce.needs_split(r, window):
                oversize.append(i)
        except LLMError:
            oversize.append(i)  # complete() reports it in its slot
    out: list[LLMResponse | LLMError | None] = [None] * len(requests)
    if oversize:
        for i, result in zip(oversize, client.complete_many([requests[i] for i in oversize])):
            out[i] = result
    batched = [i for i in range(len(requests)) if i not in set(oversize)]
    if batched:
        subset = [requests[i] for i in batched]
        batch_id = submit(client, subset)
        wait(client, batch_id)
        for i, result in zip(batched, collect(client, batch_id, subset)):
            out[i] = result
    return out
