"""`fake` provider for tests and benchmarks: deterministic, input-dependent, no network.

Failures are injected per (seed, prompt, attempt) through a hash, so a run is reproducible and
a retried attempt of the same prompt can succeed. Prompts containing `fail_marker` always fail
with a non-retryable 400; prompts containing `refuse_marker` come back as a refusal.
"""
from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from typing import Callable, Sequence

from synix_resources.errors import LLMConfigError, LLMError
from synix_resources.settings import FAKE_FAILURE_RATE, FAKE_LATENCY_S

from .base import Completion, LLMClient
from .fake_agent import agent_answer
from .fake_extract import extract_answer
from .retry import RetryableCallError
from .types import LLMRequest

FAIL_400_MARKER = "SYNIX_FAIL_400"
REFUSE_MARKER = "SYNIX_REFUSE"
FAILURE_KINDS = (429, 529, 500, "timeout")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}")
_COMMON = frozenset("""this that with from have what when where which would could should there
their about into your they them then than were been will just like also some more most such
only other over very these those here each make made does done summarise summarize summary
words following conversation""".split())


def _unit(*parts: object) -> float:
    """A reproducible number in [0, 1) from the parts."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FakeClient(LLMClient):
    provider = "fake"

    def __init__(self, *, model: str = "fake-v1", latency_s: float = 0.0,
                 failure_rate: float = 0.0, seed: int = 0,
                 failure_kinds: Sequence[int | str] = FAILURE_KINDS,
                 fail_marker: str = FAIL_400_MARKER, refuse_marker: str = REFUSE_MARKER,
                 sleep: Callable[[float], None] = time.sleep, **common):
        super().__init__(model=model, **common)
        if not FAKE_FAILURE_RATE.holds(failure_rate):
            raise LLMConfigError(f"fake failure rate {failure_rate!r} is out of range "
                                 f"(accepted: {FAKE_FAILURE_RATE.text})",
                                 hint="set LLMResource(fake_failure_rate=…) or SYNIX_FAKE_FAILURE_RATE in that range")
        if not FAKE_LATENCY_S.holds(latency_s):
            raise LLMConfigError(f"fake latency {latency_s!r} s is out of range (accepted: {FAKE_LATENCY_S.text})",
                                 hint="set LLMResource(fake_latency_s=…) or SYNIX_FAKE_LATENCY_S in that range")
        self.latency_s = latency_s
        self.failure_rate = failure_rate
        self.seed = seed
        self.failure_kinds = tuple(failure_kinds)
        self.fail_marker = fail_marker
        self.refuse_marker = refuse_marker
        self._sleep = sleep
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.failures: Counter = Counter()

    def call_once(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.latency_s:
                self._sleep(self.latency_s)
            return self._answer(request, model, attempt)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        label = request.label or "request"
        if self.fail_marker and self.fail_marker in request.prompt:
            self._count(400)
            raise LLMError(f"fake call for {label} rejected with status 400 (prompt contains "
                           f"{self.fail_marker})", status=400,
                           hint="remove the failure marker from the input")
        if _unit(self.seed, request.rendered_prompt_hash, attempt, "fail") < self.failure_rate:
            kind = self.failure_kinds[int(_unit(self.seed, request.rendered_prompt_hash, attempt,
                                                "kind") * len(self.failure_kinds))]
            self._count(kind)
            if kind == "timeout":
                raise RetryableCallError("fake timeout")
            raise RetryableCallError(f"fake status {kind}", status=int(kind))
        if self.refuse_marker and self.refuse_marker in request.prompt:
            return Completion(text="", model=model, stop_reason="refusal",
                              input_tokens=len(request.prompt) // 4)
        text = agent_answer(request) if request.shape == "agent" else \
            extract_answer(request) if request.shape == "json" else self.summary(request)
        return Completion(text=text, model=model, stop_reason="end_turn",
                          input_tokens=max(1, len(request.prompt + (request.system or "")) // 4),
                          output_tokens=max(1, len(text) // 4), raw=text,
                          source_ids=tuple(sid for sid, _ in request.sources))

    def _count(self, kind: int | str) -> None:
        with self._lock:
            self.failures[kind] += 1

    @staticmethod
    def summary(request: LLMRequest) -> str:
        """Short, different for different prompts: hash plus the prompt's most frequent words."""
        counts = Counter(w.lower() for w in _WORD.findall(request.prompt)
                         if w.lower() not in _COMMON)
        words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:6]]
        topics = ", ".join(words) or "nothing"
        return f"[fake {request.rendered_prompt_hash[:10]}] summary of: {topics}."
