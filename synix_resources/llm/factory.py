"""Choosing and building the configured LLM client, without Dagster (the CLI's no-op path and
`synix plan` must not pay for importing it).

Configuration comes from arguments and is overridden by the environment (declared in
`synix_resources/settings.py`): SYNIX_LLM_PROVIDER,
SYNIX_LLM_MODEL, SYNIX_LLM_BASE_URL, SYNIX_LLM_API_KEY, SYNIX_LLM_CONTEXT_TOKENS (the model's
context window, for local servers whose size only their user knows), SYNIX_LLM_CONCURRENCY (requests
in flight at once per process, e.g. lower for a rate-limited key), SYNIX_FAKE_LATENCY_S,
SYNIX_FAKE_FAILURE_RATE, and the budget shared by every worker of a distributed build:
SYNIX_LLM_SHARED_LIMIT_URL (a Redis URL, e.g. the Celery broker's) with
SYNIX_LLM_MAX_REQUESTS_PER_S (`shared_limit.py`). With no provider anywhere, `anthropic` is used when ANTHROPIC_API_KEY is
set, else the offline `extractive` summariser (with a warning).
"""
from __future__ import annotations

import logging
from typing import Mapping

from synix_resources.errors import LLMConfigError
from synix_resources.settings import Settings, settings

from .base import LLMClient
from .cache import ResponseCache
from .limits import RateLimiter
from .retry import RetryPolicy

log = logging.getLogger("synix.llm")
PROVIDERS = ("anthropic", "openai-compatible", "extractive", "fake")


def choose_provider(provider: str, api_key: str, env: Mapping[str, str] | None = None) -> str:
    return _choose(provider, api_key, settings(env))


_told: list[bool] = []


def _choose(provider: str, api_key: str, config: Settings) -> str:
    chosen = (config.llm_provider or provider or "").strip().lower()
    if not chosen:
        if config.anthropic_api_key or config.llm_api_key or api_key:
            return "anthropic"
        if not _told:  # once per process: a build makes a client per layer run
            _told.append(True)
            log.warning("No LLM configured (ANTHROPIC_API_KEY unset): using the offline extractive "
                        "summariser; set ANTHROPIC_API_KEY or SYNIX_LLM_PROVIDER to use a model")
        return "extractive"
    if chosen not in PROVIDERS:
        raise LLMConfigError(f"unknown LLM provider {chosen!r}",
                             hint=f"set SYNIX_LLM_PROVIDER to one of {', '.join(PROVIDERS)}")
    return chosen


def _or(value, fallback):
    """The environment's value, else the argument's (None is unset)."""
    return fallback if value is None else value


def _limiter(config: Settings, requests_per_minute: float, tokens_per_minute: float,
             shared_url: str, shared_per_s: float):
    local = (RateLimiter(requests_per_minute, tokens_per_minute)
             if requests_per_minute or tokens_per_minute else None)
    shared_url = config.llm_shared_limit_url or shared_url
    shared_per_s = _or(config.llm_max_requests_per_s, shared_per_s)
    if not shared_url:
        return local
    from .shared_limit import SharedRateLimiter

    return SharedRateLimiter(shared_url, shared_per_s, local=local)


def make_client(*, provider: str = "", model: str = "", base_url: str = "", api_key: str = "",
                temperature: float | None = None, max_tokens: int | None = None,
                concurrency: int = 16, requests_per_minute: float = 0,
                tokens_per_minute: float = 0, max_attempts: int = 6,
                fake_latency_s: float = 0.0, fake_failure_rate: float = 0.0,
                replay: bool = False, cache_path: str = "", context_tokens: int = 0,
                shared_limit_url: str = "", max_requests_per_s: float = 0,
                retry: RetryPolicy | None = None, env: Mapping[str, str] | None = None,
                **provider_options) -> LLMClient:
    """Build the configured LLMClient (outside Dagster too, e.g. the CLI).

    `provider_options` go to the provider class: `http_client=` (anthropic), `transport=`
    (openai-compatible), `seed=`/`sleep=` (fake), `poll_interval_s=` (anthropic batches).
    """
    config = settings(env)
    chosen = _choose(provider, api_key, config)
    model = config.llm_model or model
    base_url = config.llm_base_url or base_url
    key = config.llm_api_key or api_key
    common = dict(
        concurrency=_or(config.llm_concurrency, concurrency), temperature=temperature,
        max_tokens=max_tokens, replay=replay, retry=retry or RetryPolicy(max_attempts=max_attempts),
        limiter=_limiter(config, requests_per_minute, tokens_per_minute, shared_limit_url,
                         max_requests_per_s),
        cache=ResponseCache(cache_path) if cache_path else None,
        context_tokens=_or(config.llm_context_tokens, context_tokens) or None)
    if chosen == "anthropic":
        from .anthropic_client import AnthropicClient, missing_key_error

        key = key or config.anthropic_api_key or ""
        if not key and not replay:
            raise missing_key_error()
        if replay and not key:
            # Replay answers from the cache; an offline rebuild needs no key. Nothing is sent.
            key = "replay-without-key"
        return AnthropicClient(model=model or "claude-sonnet-4-6", api_key=key,
                               base_url=base_url or None, **provider_options, **common)
    if chosen == "openai-compatible":
        from .openai_compat import DEFAULT_BASE_URL, OpenAICompatClient

        return OpenAICompatClient(model=model, base_url=base_url or DEFAULT_BASE_URL,
                                  api_key=key or config.openai_api_key or None,
                                  **provider_options, **common)
    if chosen == "fake":
        from .fake import FakeClient

        return FakeClient(model=model or "fake-v1",
                          latency_s=_or(config.fake_latency_s, fake_latency_s),
                          failure_rate=_or(config.fake_failure_rate, fake_failure_rate),
                          **provider_options, **common)
    from .extractive import ExtractiveClient

    return ExtractiveClient(**provider_options, **common)


def quiet_client(**config) -> LLMClient:
    """`make_client(**config)` without the "no LLM configured" notice: for plans and code
    versions, which build the client a build would use but send nothing (the notice is for
    builds)."""
    log.disabled = True
    try:
        return make_client(**config)
    finally:
        log.disabled = False
