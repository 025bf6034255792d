"""The Dagster resource assets call for every LLM request (provider selection: `factory.py`).

Its fields are overridden by the environment as `factory.make_client` describes.

    import dagster as dg
    llm = LLMResource(provider="anthropic", api_key=dg.EnvVar("ANTHROPIC_API_KEY"),
                      cache_path=".synix/llm_cache.sqlite")
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

import dagster as dg
from pydantic import Field, PrivateAttr

from synix_resources.errors import LLMError

from .base import LLMClient
from .factory import make_client
from .types import LLMRequest, LLMResponse


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
    shared_limit_url: str = Field(default="", description="Redis URL of the request budget shared "
                                  "by all workers (docs/scale.md); empty = per-process limits only")
    max_requests_per_s: float = Field(default=0, description="the shared budget, requests/second")
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
                    shared_limit_url=self.shared_limit_url,
                    max_requests_per_s=self.max_requests_per_s,
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
