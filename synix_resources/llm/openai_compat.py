"""`openai-compatible` provider: any `/v1/chat/completions` server (Ollama, vLLM, llama.cpp,
LM Studio, hosted gateways) over plain httpx."""
from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx

from synix_resources.errors import LLMConfigError, LLMError

from .base import Completion, LLMClient
from .pricing import estimate_cost
from .retry import RetryableCallError, is_retryable_status, parse_retry_after
from .types import LLMRequest

DEFAULT_BASE_URL = "http://localhost:11434/v1"  # Ollama
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
DEFAULT_LOCAL_CONTEXT = 8192  # local servers often run small contexts (SYNIX_LLM_CONTEXT_TOKENS)

FIXES = {
    400: "the server rejected the request; check the model name and max_tokens",
    401: "the API key was rejected; check SYNIX_LLM_API_KEY or OPENAI_API_KEY",
    403: "the API key may not use this model; check its permissions",
    404: "unknown model or endpoint; check SYNIX_LLM_MODEL and SYNIX_LLM_BASE_URL (…/v1)",
}


def completions_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


class OpenAICompatClient(LLMClient):
    provider = "openai-compatible"

    def __init__(self, *, model: str, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 timeout_s: float = 600.0, transport: httpx.BaseTransport | None = None, **common):
        if not model:
            raise LLMConfigError("LLM provider 'openai-compatible' needs a model name",
                                 hint="set SYNIX_LLM_MODEL (e.g. llama3.1 for Ollama)")
        parts = urlsplit(base_url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise LLMConfigError(f"LLM base URL {base_url!r} is not an http(s) URL",
                                 hint="set SYNIX_LLM_BASE_URL, e.g. http://localhost:11434/v1")
        secrets = (*common.pop("secrets", ()), api_key or "")
        super().__init__(model=model, secrets=secrets, **common)
        self.url = completions_url(base_url)
        self.local = parts.hostname in LOCAL_HOSTS
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(headers=headers, timeout=timeout_s, transport=transport)

    def close(self) -> None:
        self.http.close()

    def context_window_for(self, model: str) -> int | None:
        if self.context_tokens:
            return self.context_tokens
        return DEFAULT_LOCAL_CONTEXT if self.local else super().context_window_for(model)

    def cost_of(self, model: str, completion: Completion, *, batch: bool = False) -> float:
        if self.local:
            return 0.0  # your own hardware
        return estimate_cost(model, completion.input_tokens, completion.output_tokens,
                             completion.cache_read_tokens, batch=batch)

    def call_once(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": request.prompt})
        body = {"model": model, "messages": messages, "temperature": request.temperature,
                "max_tokens": request.max_tokens, "stream": False}
        label = request.label or "request"
        try:
            response = self.http.post(self.url, json=body)
        except httpx.TimeoutException as err:
            raise RetryableCallError("timeout") from err
        except httpx.TransportError as err:
            raise RetryableCallError(f"connection error ({type(err).__name__})") from err
        if response.status_code >= 400:
            detail = self.redact(response.text[:300])
            if is_retryable_status(response.status_code):
                raise RetryableCallError(f"status {response.status_code}",
                                         status=response.status_code,
                                         retry_after=parse_retry_after(response.headers))
            raise LLMError(f"{self.provider} server rejected the call for {label} with status "
                           f"{response.status_code}: {detail}", status=response.status_code,
                           hint=FIXES.get(response.status_code, "see the status above"))
        try:
            payload = response.json()
            choice = payload["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise RetryableCallError(f"malformed response body ({type(err).__name__})") from err
        usage = payload.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        return Completion(
            text=text, model=payload.get("model") or model,
            input_tokens=max(0, (usage.get("prompt_tokens") or 0) - cached),
            output_tokens=usage.get("completion_tokens") or 0, cache_read_tokens=cached,
            stop_reason=choice.get("finish_reason"), raw=json.dumps(payload))
