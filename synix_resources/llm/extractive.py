"""`extractive` provider: the offline default when no API key is configured.

No model, no network, deterministic. It selects the most informative sentences of its inputs
(centroid TF-IDF scoring with redundancy removal), keeps them in their original order, and keeps
each one attributable: the response lists the contributing source ids and, when there are
several sources, each run of sentences ends with `[source_id]`. Audit labels it plainly:
provider "extractive", model "extractive-v1".
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .base import Completion, LLMClient
from .types import EXTRACTIVE_MODEL, LLMRequest

DEFAULT_WORDS = 150
REDUNDANCY = 0.6  # cosine similarity above which a sentence repeats one already chosen
MIN_WORDS = 4

_RANGE = re.compile(r"(\d+)\s*(?:-|–|—|to)\s*(\d+)\s*words", re.I)
_LIMIT = re.compile(
    r"(?:at most|under|no more than|up to|maximum of|max|within|in)\s+(\d+)\s+words", re.I)
_SPLIT = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n+")
# A line that starts a new unit even without punctuation before it: a speaker turn, a list
# item or a heading.
_LINE_START = re.compile(r"^\s*(?:[\w .'-]{1,24}:\s|[-*•]\s|\d+[.)]\s|#)")
_TOKEN = re.compile(r"[a-z0-9][a-z0-9'’-]*")
# Structure of a rendered transcript (speaker headers, its header block): not content.
_MARKUP = re.compile(r"^\[#\d+[^\]]*\]\s*[\w ()./-]{1,40}:$|^(?:Conversation|Date|Source):\s")
_STOP = frozenset("""a an and are as at be been but by can could did do does for from had has
have he her his i if in into is it its just me my no not of on or our she so than that the
their them then there these they this to too up us was we were what when where which who will
with would you your yes ok okay also about all any some more very really get got like
one""".split())


@dataclass
class _Sentence:
    source_index: int
    position: int
    source_id: str
    text: str
    words: int


def target_words(request: LLMRequest) -> int:
    """request.max_words, else a "200-400 words" range / "at most 150 words" in the prompt."""
    if request.max_words:
        return request.max_words
    instructions = f"{request.system or ''}\n{request.prompt}"
    if match := _RANGE.search(instructions):
        return max(int(match.group(1)), int(match.group(2)))
    if match := _LIMIT.search(instructions):
        return int(match.group(1))
    return min(DEFAULT_WORDS, max(20, int(request.max_tokens * 0.75)))


def unwrap(text: str) -> str:
    """Join hard-wrapped prose lines so a wrapped sentence is not cut at the line break."""
    out: list[str] = []
    for line in text.split("\n"):
        previous = out[-1].rstrip() if out else ""
        if (len(previous) >= 30 and line.strip() and previous[-1] not in ".!?:;"
                and not _LINE_START.match(line)):
            out[-1] = f"{previous} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out)


def _sentences(request: LLMRequest) -> list[_Sentence]:
    inputs = list(request.sources) or [(request.label or "prompt", request.prompt)]
    found: list[_Sentence] = []
    for index, (source_id, text) in enumerate(inputs):
        for position, raw in enumerate(_SPLIT.split(unwrap(text))):
            sentence = " ".join(raw.split())
            if not sentence or sentence.startswith("#") or _RANGE.search(sentence) \
                    or _LIMIT.search(sentence) or _MARKUP.match(sentence):
                continue  # headings and length instructions are not content
            found.append(_Sentence(index, position, source_id, sentence, len(sentence.split())))
    substantial = [s for s in found if s.words >= MIN_WORDS]
    return substantial or found


def _vectors(sentences: list[_Sentence]) -> np.ndarray:
    bags = [Counter(t for t in _TOKEN.findall(s.text.lower()) if t not in _STOP and len(t) > 1)
            for s in sentences]
    vocabulary = {term: i for i, term in enumerate(sorted({t for bag in bags for t in bag}))}
    document_freq = Counter(t for bag in bags for t in bag)
    matrix = np.zeros((len(sentences), max(1, len(vocabulary))))
    n = len(sentences)
    for row, bag in enumerate(bags):
        for term, count in bag.items():
            idf = math.log((1 + n) / (1 + document_freq[term])) + 1.0
            matrix[row, vocabulary[term]] = (1 + math.log(count)) * idf
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def select(sentences: list[_Sentence], budget: int) -> list[_Sentence]:
    """Greedy: best-scoring sentences that fit the word budget and repeat nothing chosen."""
    if not sentences:
        return []
    vectors = _vectors(sentences)
    centroid = vectors.sum(axis=0)
    centroid /= np.linalg.norm(centroid) or 1.0
    centrality = vectors @ centroid  # how typical of the whole input a sentence is
    density = vectors.sum(axis=1) / np.sqrt(np.maximum(1, [s.words for s in sentences]))
    density = density / (density.max() or 1.0)  # how much content per word it carries
    scores = 0.7 * centrality + 0.3 * density
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        if used >= budget:
            break
        if used + sentences[i].words > budget:
            continue
        if chosen and float(np.max(vectors[chosen] @ vectors[i])) > REDUNDANCY:
            continue
        chosen.append(i)
        used += sentences[i].words
    if not chosen:  # every sentence is longer than the budget: cut the best one
        best = sentences[order[0]]
        cut = " ".join(best.text.split()[:budget]) + " …"
        return [_Sentence(best.source_index, best.position, best.source_id, cut, budget)]
    return [sentences[i] for i in sorted(chosen, key=lambda i: (sentences[i].source_index,
                                                                sentences[i].position))]


def render(selected: list[_Sentence], attribute: bool) -> str:
    if not attribute:
        return " ".join(s.text for s in selected)
    lines: list[str] = []
    run: list[_Sentence] = []
    for sentence in selected + [None]:  # sentinel flushes the last run
        if run and (sentence is None or sentence.source_id != run[0].source_id):
            lines.append(" ".join(s.text for s in run) + f" [{run[0].source_id}]")
            run = []
        if sentence is not None:
            run.append(sentence)
    return "\n".join(lines)


class ExtractiveClient(LLMClient):
    provider = "extractive"

    def __init__(self, *, model: str = EXTRACTIVE_MODEL, **common):
        super().__init__(model=EXTRACTIVE_MODEL, **common)  # one algorithm, one label

    def model_for(self, request: LLMRequest) -> str:
        return EXTRACTIVE_MODEL  # a pipeline's model name must not make this look like an LLM

    def context_window_for(self, model: str) -> int | None:
        return None  # reads any length; nothing to split

    def call_once(self, request: LLMRequest, model: str, attempt: int) -> Completion:
        selected = select(_sentences(request), target_words(request))
        text = render(selected, attribute=len(request.sources) > 1)
        return Completion(text=text, model=EXTRACTIVE_MODEL, stop_reason="end_turn", raw=text,
                          source_ids=tuple(dict.fromkeys(s.source_id for s in selected)),
                          flags=("extractive", "temperature_omitted"))
