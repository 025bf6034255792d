"""Provider selection and the Dagster resource assets call.

Configuration comes from the resource (or `make_client` arguments) and is overridden by the
environment: SYNIX_LLM_PROVIDER, SYNIX_LLM_MODEL, SYNIX_LLM_BASE_URL, SYNIX_LLM_API_KEY,
SYNIX_FAKE_LATENCY_S, SYNIX_FAKE_FAILURE_RATE. With no provider anywhere, `anthropic` is used
when ANTHROPIC_API_KEY is set, else the offline `extractive` summariser (with a warning).

    import dagster as dg
    llm = LLMResource(provider="anthropic", api_key=dg.EnvVar("ANTHROPIC_API_KEY"),
                      cache_path=".synix/llm_cache.sqlite")
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Mapping, Optional, Sequence

import dagster as dg
from pydantic import Field, PrivateAttr

from synix_resources.errors import LLMConfigError, LLMError

from .base import LLMClient
from .cache import ResponseCache
from .limits import RateLimiter
from .retry import RetryPolicy
from .types import LLMRequest, LLMResponse

log = logging.getLogger("synix.llm")
PROVIDERS = ("anthropic", "openai-compatible", "extractive", "fake")


def _env_float(env: Mapping[str, str], name: str, fallback: float) -> float:
    value = env.get(name, "").strip()
    if not value:
        return fallback
    try:
        return float(value)
    except ValueError:
        raise LLMConfigError(f"{name}={value!r} is not a number", hint=f"set {name} to e.g. 0.2")


def choose_provider(provider: str, api_key: str, env: Mapping[str, str]) -> str:
    chosen = (env.get("SYNIX_LLM_PROVIDER") or provider or "").strip().lower()
    if not chosen:
        if env.get("ANTHROPIC_API_KEY") or env.get("SYNIX_LLM_API_KEY") or api_key:
            return "anthropic"
        log.warning("No LLM configured (ANTHROPIC_API_KEY unset): using the offline extractive "
                    "summariser; set ANTHROPIC_API_KEY or SYNIX_LLM_PROVIDER to use a model")
        return "extractive"
    if chosen not in PROVIDERS:
        raise LLMConfigError(f"unknown LLM provider {chosen!r}",
                             hint=f"set SYNIX_LLM_PROVIDER to one of {', '.join(PROVIDERS)}")
    return chosen


def make_client(*, provider: str = "", model: str = "", base_url: str = "", api_key: str = "",
                temperature: float | None = None, max_tokens: int | None = None,
                concurrency: int = 16, requests_per_minute: float = 0,
                tokens_per_minute: float = 0, max_attempts: int = 6,
                fake_latency_s: float = 0.0, fake_failure_rate: float = 0.0,
                replay: bool = False, cache_path: str = "", context_tokens: int = 0,
                retry: RetryPolicy | None = None, env: Mapping[str, str] | None = None,
                **provider_options) -> LLMClient:
    """Build the configured LLMClient (outside Dagster too, e.g. the CLI).

    `provider_options` go to the provider class: `http_client=` (anthropic), `transport=`
    (openai-compatible), `seed=`/`sleep=` (fake), `poll_interval_s=` (anthropic batches).
    """
    env = os.environ if env is None else env
    chosen = choose_provider(provider, api_key, env)
    model = env.get("SYNIX_LLM_MODEL") or model
    base_url = env.get("SYNIX_LLM_BASE_URL") or base_url
    key = env.get("SYNIX_LLM_API_KEY") or api_key
    common = dict(
        concurrency=concurrency, temperature=temperature, max_tokens=max_tokens, replay=replay,
        retry=retry or RetryPolicy(max_attempts=max_attempts),
        limiter=(RateLimiter(requests_per_minute, tokens_per_minute)
                 if requests_per_minute or tokens_per_minute else None),
        cache=ResponseCache(cache_path) if cache_path else None,
        context_tokens=context_tokens or None)
    if chosen == "anthropic":
        from .anthropic_client import AnthropicClient, missing_key_error

        key = key or env.get("ANTHROPIC_API_KEY", "")
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
                                  api_key=key or env.get("OPENAI_API_KEY") or None,
                                  **provider_options, **common)
    if chosen == "fake":
        from .fake import FakeClient

        return FakeClient(model=model or "fake-v1",
                          latency_s=_env_float(env, "SYNIX_FAKE_LATENCY_S", fake_latency_s),
                          failure_rate=_env_float(env, "SYNIX_FAKE_FAILURE_RATE",
                                                  fake_failure_rate),
                          **provider_options, **common)
    from .extractive import ExtractiveClient

    return ExtractiveClient(**provider_options, **common)


class LLMResource(dg.ConfigurableResource):
    """Every LLM call of a Synix build goes through this resource.

    Pass the key as `api_key=dg.EnvVar("ANTHROPIC_API_KEY")` (Dagster then never shows it) or
    leave it empty to read ANTHROPIC_API_KEY / SYNIX_LLM_API_KEY at run time.
    """

    provider: str = Field(default="", description="anthropic | openai-compatible | extractive | "
                          "fake; empty: anthropic if ANTHROPIC_API_KEY is set, else extractive")
    model: str = Field(default="", description="pipeline default model; steps may override")
    base_url: str = Field(default="", description="server URL (openai-compatible; proxies)")
    api_key: str = Field(default="", repr=False, description="use dg.EnvVar, never a literal")
    temperature: Optional[float] = Field(default=None, description="force for every request")
    max_tokens: Optional[int] = Field(default=None, description="force for every request")
    concurrency: int = 16
    requests_per_minute: float = Field(default=0, description="0 = unlimited")
    tokens_per_minute: float = Field(default=0, description="0 = unlimited")
    max_attempts: int = 6
    fake_latency_s: float = 0.0
    fake_failure_rate: float = 0.0
    replay: bool = Field(default=False, description="answer from the response cache, no calls")
    cache_path: str = Field(default="", description="SQLite response cache; empty = none")
    context_tokens: int = Field(default=0, description="override the model's context window")

    _client: Optional[LLMClient] = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def get_client(self) -> LLMClient:
        with self._lock:
            if self._client is None:
                self._client = make_client(
                    provider=self.provider, model=self.model, base_url=self.base_url,
                    api_key=self.api_key, temperature=self.temperature,
                    max_tokens=self.max_tokens, concurrency=self.concurrency,
                    requests_per_minute=self.requests_per_minute,
                    tokens_per_minute=self.tokens_per_minute, max_attempts=self.max_attempts,
                    fake_latency_s=self.fake_latency_s, fake_failure_rate=self.fake_failure_rate,
                    replay=self.replay, cache_path=self.cache_path,
                    context_tokens=self.context_tokens)
            return self._client

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.get_client().complete(request)

    def complete_many(self, requests: Sequence[LLMRequest], *, batch: bool = False,
                      on_result=None) -> list[LLMResponse | LLMError]:
        return self.get_client().complete_many(requests, batch=batch, on_result=on_result)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
