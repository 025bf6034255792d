"""`anthropic` provider: the official SDK, Messages API, with Synix's own retries.

The SDK's retries are disabled (`max_retries=0`) so every attempt is counted and paced by
`RetryPolicy`. A system prompt long enough to be cached is sent with `cache_control` so the
shared prefix of a layer's calls is billed at the cache-read rate after the first call.
"""
from __future__ import annotations

import inspect
import time
from typing import Callable

import anthropic

from synix_resources.errors import LLMConfigError, LLMError
from synix_resources.settings import settings

from . import batches
from .base import Completion, LLMClient
from .mapreduce import estimate_tokens
from .pricing import accepts_temperature
from .retry import RetryableCallError, is_retryable_status, parse_retry_after
from .types import LLMRequest, LLMResponse

DEFAULT_MODEL = "claude-sonnet-4-6"
# SDK 2.x speaks API version 2026-10-21, which rejects temperature/top_p/top_k on every model
# and has no such parameter; older SDKs (API 2023-06-01) accept it for pre-4.7 models.
SDK_TAKES_TEMPERATURE = (
    "temperature" in inspect.signature(anthropic.resources.messages.Messages.create).parameters)
# Anthropic ignores cache breakpoints on prefixes under ~1024 tokens (2048+ on Haiku models), so
# shorter system prompts are sent as a plain string.
CACHE_MIN_TOKENS = 1024

FIXES = {
    400: "the request was rejected as invalid; check the model name, max_tokens and the input",
    401: "the API key was rejected; check ANTHROPIC_API_KEY or SYNIX_LLM_API_KEY",
    403: "the API key may not use this model or workspace; check the key's permissions",
    404: "unknown model or endpoint; check SYNIX_LLM_MODEL and SYNIX_LLM_BASE_URL",
    413: "the request is too large; pass sources= and render= so it is summarised in parts",
}


def missing_key_error() -> LLMConfigError:
    return LLMConfigError(
        "LLM provider 'anthropic' has no API key",
        hint="set ANTHROPIC_API_KEY (or SYNIX_LLM_API_KEY), or set SYNIX_LLM_PROVIDER=extractive "
             "to build offline")


class AnthropicClient(LLMClient):
    provider = "anthropic"

    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, http_client=None, timeout_s: float = 600.0,
                 cache_min_tokens: int = CACHE_MIN_TOKENS, poll_interval_s: float = 60.0,
                 max_batch_wait_s: float = 26 * 3600,
                 poll_sleep: Callable[[float], None] = time.sleep, **common):
        key = api_key or settings().anthropic_api_key or ""
        if not key:
            raise missing_key_error()
        secrets = (*common.pop("secrets", ()), key)
        super().__init__(model=model, secrets=secrets, **common)
        # base_url None lets the SDK apply ANTHROPIC_BASE_URL. http_client (an httpx2.Client in
        # this SDK generation) is how tests mount a mock transport.
        self.sdk = anthropic.Anthropic(api_key=key, base_url=base_url or None, max_retries=0,
                                       timeout=timeout_s, http_client=http_client)
        self.cache_min_tokens = cache_min_tokens
        self.poll_interval_s = poll_interval_s
        self.max_batch_wait_s = max_batch_wait_s
        self.poll_sleep = poll_sleep

    def close(self) -> None:
        self.sdk.close()

    # one Messages API call ---------------------------------------------------------------------
    def params(self, request: LLMRequest, model: str) -> dict:
        params: dict = {"model": model, "max_tokens": request.max_tokens,
                        "messages": [{"role": "user", "content": request.prompt}]}
        if request.system:
            if estimate_tokens(request.system) >= self.cache_min_tokens:
                params["system"] = [{"type": "text", "text": request.system,
                                     "cache_control": {"type": "ephemeral"}}]
            else:
                params["system"] = request.system
        if self.sends_temperature(model):
            params["temperature"] = request.temperature
        return params

    @staticmethod
    def sends_temperature(model: str) -> bool:
        return SDK_TAKES_TEMPERATURE and accepts_temperature(model)

    def call_once(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        message = self.sdk_call(lambda: self.sdk.messages.create(**self.params(request, model)),
                                request.label)
        return self.completion_from(message, model)

    def sdk_call(self, fn, label: str):
        """Run one SDK call, translating its errors into retryable / final ones."""
        try:
            return fn()
        except anthropic.APITimeoutError as err:
            raise RetryableCallError("timeout") from err
        except anthropic.APIConnectionError as err:
            raise RetryableCallError("connection error") from err
        except anthropic.APIStatusError as err:
            status = err.status_code
            detail = err.api_message or err.type or "no detail"
            if is_retryable_status(status):
                wait = parse_retry_after(err.response.headers)
                raise RetryableCallError(f"status {status} ({detail})", status=status,
                                         retry_after=wait) from err
            raise LLMError(f"anthropic rejected the call for {label or 'request'} with status "
                           f"{status}: {self.redact(detail)}", status=status,
                           hint=FIXES.get(status, "see the status above")) from err

    def completion_from(self, message, model: str) -> Completion:
        usage = message.usage
        flags = () if self.sends_temperature(model) else ("temperature_omitted",)
        return Completion(
            text="".join(block.text for block in message.content if block.type == "text"),
            model=message.model or model, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            stop_reason=message.stop_reason, raw=message.model_dump_json(), flags=flags)

    # Message Batches API ------------------------------------------------------------------------
    def submit_batch(self, requests: list[LLMRequest]) -> str:
        """Submit (or find the already submitted batch for exactly these requests); its id."""
        return batches.submit(self, [self.prepare(r) for r in requests])

    def poll_batch(self, batch_id: str) -> str:
        """processing_status: "in_progress", "canceling" or "ended"."""
        return batches.poll(self, batch_id)

    def collect_batch(self, batch_id: str,
                      requests: list[LLMRequest]) -> list[LLMResponse | LLMError]:
        return batches.collect(self, batch_id, [self.prepare(r) for r in requests])

    def submit_and_collect(self, requests: list[LLMRequest]) -> list[LLMResponse | LLMError]:
        return batches.run(self, requests)
