"""`extractive` provider: the offline default when no API key is configured.

No model, no network, deterministic. It selects the most informative sentences of its inputs
(centroid TF-IDF scoring with redundancy removal, `sentences.py`), keeps them in their original
order, and keeps each one attributable: the response lists the contributing source ids and, when
there are several sources, each run of sentences ends with `[source_id]`. A rollup starts with a
`# Topics:` line of the inputs' key phrases; a fold's memory is a sectioned document
(`memory_doc.py`). Audit labels it plainly: provider "extractive", model "extractive-v2".
"""
from __future__ import annotations

from .base import Completion, LLMClient
from .memory_doc import memory_document
from .sentences import render, request_sentences, select, target_words, topic_line
from .types import EXTRACTIVE_MODEL, LLMRequest

__all__ = ["ExtractiveClient", "target_words"]


class ExtractiveClient(LLMClient):
    provider = "extractive"

    def __init__(self, *, model: str = EXTRACTIVE_MODEL, **common):
        super().__init__(model=EXTRACTIVE_MODEL, **common)  # one algorithm, one label

    def model_for(self, request: LLMRequest) -> str:
        return EXTRACTIVE_MODEL  # a pipeline's model name must not make this look like an LLM

    def context_window_for(self, model: str) -> int | None:
        return None  # reads any length; nothing to split

    def call_once(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        budget = target_words(request)
        text, source_ids = memory_document(request, budget) if request.shape == "memory" else ("", ())
        if not text:  # not a memory, or inputs too thin to lay one out
            headline = topic_line([t for _, t in request.sources]) if request.shape == "rollup" else ""
            selected = select(request_sentences(request), budget)
            text = render(selected, attribute=len(request.sources) > 1)
            text = f"{headline}\n{text}" if headline else text
            source_ids = tuple(dict.fromkeys(s.source_id for s in selected))
        return Completion(text=text, model=EXTRACTIVE_MODEL, stop_reason="end_turn", raw=text,
                          source_ids=source_ids, flags=("extractive", "temperature_omitted"))
