"""`LLMClient`: the one interface every provider implements.

Providers only implement `call_once` (a single attempt). Everything shared lives here: the
concurrency bound, rate limits, retries, map-reduce for oversize inputs, the response cache /
replay, refusal detection, cost and the audit fields.

The response cache is consulted before every call, not only on replay: a request identical to
one already answered (same rendered prompt, system prompt, provider, model, temperature and
max_tokens) is served from it, so answers received before a crash or a failed store write are
never paid for twice. `replay=True` additionally forbids calling the provider at all.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Sequence

from synix_resources.errors import LLMConfigError, LLMError, LLMRefusal
from synix_resources.settings import CONCURRENCY

from . import mapreduce
from .cache import ResponseCache, cache_key
from .limits import RateLimiter
from .pricing import context_window, estimate_cost
from .retry import RetryPolicy
from .types import LLMRequest, LLMResponse

log = logging.getLogger("synix.llm")

REFUSAL_STOP_REASONS = frozenset({"refusal", "content_filter"})


@dataclass
class Completion:
    """What one successful provider attempt returned, before accounting."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str | None = None
    raw: str = ""
    source_ids: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


class LLMClient(ABC):
    provider: str = ""

    def __init__(self, *, model: str, concurrency: int = 16, retry: RetryPolicy | None = None,
                 limiter: RateLimiter | None = None, cache: ResponseCache | None = None,
                 replay: bool = False, context_tokens: int | None = None,
                 temperature: float | None = None, max_tokens: int | None = None,
                 secrets: Sequence[str] = ()):
        if not CONCURRENCY.holds(concurrency):
            raise LLMConfigError(f"LLM concurrency {concurrency!r} is out of range (accepted: {CONCURRENCY.text})",
                                 hint="set LLMResource(concurrency=…) or SYNIX_LLM_CONCURRENCY in that range")
        self.model = model
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self.cache = cache
        self.replay = replay
        self.context_tokens = context_tokens  # overrides the price table's context window
        self.temperature_override = temperature
        self.max_tokens_override = max_tokens
        self._secrets = tuple(s for s in secrets if s)
        self._slots = threading.BoundedSemaphore(concurrency)
        self._count_lock = threading.Lock()
        self.calls = 0  # provider attempts made (0 for answers served from the cache)

    def __repr__(self) -> str:  # never shows credentials
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r})"

    # provider hooks ----------------------------------------------------------------------------
    @abstractmethod
    def call_once(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        """One attempt. Raise RetryableCallError for transient failures, LLMError otherwise."""

    def context_window_for(self, model: str) -> int | None:
        """Tokens the model can read; None means unbounded (no map-reduce)."""
        return self.context_tokens or context_window(model, self.provider)

    def cost_of(self, model: str, completion: Completion, *, batch: bool = False) -> float:
        return estimate_cost(model, completion.input_tokens, completion.output_tokens,
                             completion.cache_read_tokens, completion.cache_write_tokens,
                             batch=batch, provider=self.provider)

    def submit_and_collect(self, requests: list[LLMRequest]) -> list[LLMResponse | LLMError]:
        """Batch API path; providers without one run the requests concurrently instead."""
        log.info("%s has no batch API; running %d requests concurrently", self.provider,
                 len(requests))
        return self.complete_many(requests)

    def close(self) -> None:
        """Release network resources (no-op for offline providers)."""

    # public API --------------------------------------------------------------------------------
    def model_for(self, request: LLMRequest) -> str:
        return request.model or self.model

    def prepare(self, request: LLMRequest) -> LLMRequest:
        """Apply pipeline-wide overrides of temperature / max_tokens."""
        changes = {}
        if self.temperature_override is not None:
            changes["temperature"] = self.temperature_override
        if self.max_tokens_override is not None:
            changes["max_tokens"] = self.max_tokens_override
        return dataclasses.replace(request, **changes) if changes else request

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One response, or raise LLMError / LLMRefusal naming the request's label."""
        request = self.prepare(request)
        model = self.model_for(request)
        window = self.context_window_for(model)
        try:
            if window and mapreduce.needs_split(request, window):
                return mapreduce.complete_in_parts(self, request, window)
            return self.complete_single(request)
        except LLMError as err:
            clean = self._redacted(err)
            if clean is err:
                raise
            raise clean from None  # the chained original would still carry the secret

    def complete_many(self, requests: Sequence[LLMRequest], *, batch: bool = False,
                      on_result: Callable[[int, "LLMResponse | LLMError"], None] | None = None,
                      ) -> list[LLMResponse | LLMError]:
        """Results in request order; a failed request leaves its LLMError in its slot.

        `on_result(index, result)` is called in the calling thread as each request finishes, so
        a caller can store finished work at once: a crash mid-layer then loses only the calls
        still in flight."""
        requests = list(requests)
        if not requests:
            return []
        if batch and not self.replay:
            prepared = [self.prepare(r) for r in requests]
            results = [self.cached_response(r) for r in prepared]
            missing = [i for i, r in enumerate(results) if r is None]
            if missing:  # only what the cache cannot answer is submitted
                fresh = self.submit_and_collect([prepared[i] for i in missing])
                for i, result in zip(missing, fresh):
                    results[i] = result
            if on_result is not None:
                for i, result in enumerate(results):
                    on_result(i, result)
            return results  # type: ignore[return-value]
        workers = min(self.concurrency, len(requests))
        results: list[LLMResponse | LLMError | None] = [None] * len(requests)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="synix-llm")
        try:
            futures = {pool.submit(self._complete_or_error, r): i for i, r in enumerate(requests)}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                if on_result is not None:
                    on_result(i, results[i])
        finally:
            # On Ctrl-C (or any error) the queued requests are dropped, not sent: only the calls
            # already in flight finish (and land in the response cache).
            pool.shutdown(wait=True, cancel_futures=True)
        return results  # type: ignore[return-value]

    # shared machinery --------------------------------------------------------------------------
    def _complete_or_error(self, request: LLMRequest) -> LLMResponse | LLMError:
        try:
            return self.complete(request)
        except LLMError as err:
            return err

    def complete_single(self, request: LLMRequest) -> LLMResponse:
        """One request that fits the context window: cache/replay, limits, retries, audit."""
        model = self.model_for(request)
        key = cache_key(request, self.provider, model)
        cached = self.cached_response(request, key)
        if cached is not None:
            return cached
        if self.replay:
            raise LLMError(f"replay: no cached {self.provider}/{model} response for "
                           f"{request.label or 'request'}",
                           hint="run without replay to call the provider, or point cache_path "
                                "at the cache the original run wrote")
        started = time.monotonic()
        estimated_tokens = mapreduce.estimate_tokens(request.prompt + (request.system or ""))

        def attempt(number: int) -> Completion:
            if self.limiter is not None:
                self.limiter.acquire(estimated_tokens + request.max_tokens)
            with self._slots:
                with self._count_lock:
                    self.calls += 1
                return self.call_once(request, model, number)

        completion, attempts = self.retry.run(attempt, label=request.label, provider=self.provider)
        response = self.response_from(request, model, completion, attempts=attempts,
                                      latency_s=time.monotonic() - started)
        self.check_output(request, response)
        if self.cache is not None:
            self.cache.put(key, request, response)
        return response

    def response_from(self, request: LLMRequest, model: str, completion: Completion, *,
                      attempts: int, latency_s: float, batch: bool = False) -> LLMResponse:
        flags = completion.flags
        if completion.stop_reason in ("max_tokens", "length"):
            flags = (*flags, "truncated")  # kept, but visible in the audit trail
        return LLMResponse(
            text=completion.text, provider=self.provider, model=completion.model or model,
            input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
            cache_read_tokens=completion.cache_read_tokens,
            cache_write_tokens=completion.cache_write_tokens,
            cost_usd=self.cost_of(model, completion, batch=batch), latency_s=round(latency_s, 4),
            attempts=attempts, stop_reason=completion.stop_reason, flags=flags,
            rendered_prompt_hash=request.rendered_prompt_hash,
            template_hash=request.template_hash,
            # None when the model takes no temperature and it was therefore not sent
            temperature=None if "temperature_omitted" in completion.flags else request.temperature,
            max_tokens=request.max_tokens, source_ids=completion.source_ids,
            raw=completion.raw, label=request.label, batch=batch)

    def check_output(self, request: LLMRequest, response: LLMResponse) -> None:
        """Refusals and empty answers are errors, never memory."""
        if response.stop_reason in REFUSAL_STOP_REASONS:
            flag, why = "refusal", f"refused (stop_reason {response.stop_reason})"
        elif not response.text.strip():
            flag, why = "empty_output", "returned empty output"
        else:
            return
        response.flags = tuple(dict.fromkeys([*response.flags, flag]))
        err = LLMRefusal(f"{self.provider} model {response.model} {why} for "
                         f"{request.label or 'request'}",
                         hint="the output was not stored; inspect the input or rephrase the prompt")
        err.response = response  # kept for the audit trail of the failed partition
        raise err

    def cached_response(self, request: LLMRequest, key: str | None = None) -> LLMResponse | None:
        """The cached answer to this (prepared) request marked from_cache, or None: no call,
        no cost; provider and model stay those of the call that produced it, so the audit
        still names them."""
        if self.cache is None:
            return None
        cached = self.cache.get(key or cache_key(request, self.provider, self.model_for(request)))
        if cached is None:
            return None
        return dataclasses.replace(cached, from_cache=True, attempts=0, latency_s=0.0,
                                   cost_usd=0.0, label=request.label or cached.label,
                                   template_hash=request.template_hash or cached.template_hash)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return text

    def _redacted(self, err: LLMError) -> LLMError:
        message = str(err)
        if not any(secret in message or secret in (err.hint or "") for secret in self._secrets):
            return err
        clean = type(err)(self.redact(message), status=err.status, retryable=err.retryable,
                          hint=self.redact(err.hint) if err.hint else None)
        return clean
