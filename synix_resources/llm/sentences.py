"""Sentence selection, the algorithm of the offline `extractive` summariser.

Centroid TF-IDF scoring with redundancy removal: the most informative sentences of the inputs,
in their original order, each attributable to its source.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from synix_resources.keyphrases import STOP_WORDS, phrases

from .types import LLMRequest

if TYPE_CHECKING:  # numpy loads when a summary is made, not when the offline client is
    import numpy as np

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
_STOP = STOP_WORDS  # one stop list for sentence vectors and key phrases


_MARKER = re.compile(r"\s*\[[^\]\s]+\]\s*$")  # a "[source_id]" ending a line of an earlier summary


@dataclass
class Sentence:
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
    """Join hard-wrapped prose lines so a wrapped sentence is not cut at the line break (a
    heading is never continued: the text after it would be dropped with it)."""
    out: list[str] = []
    for line in text.split("\n"):
        previous = out[-1].rstrip() if out else ""
        if (len(previous) >= 30 and line.strip() and previous[-1] not in ".!?:;"
                and not previous.lstrip().startswith("#") and not _LINE_START.match(line)):
            out[-1] = f"{previous} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out)


def sentences_of(sources: list[tuple[str, str]]) -> list[Sentence]:
    """The content sentences of each source, in order (headings, length instructions, transcript
    markup and the `[source_id]` markers of an earlier summary are not content). Input that is
    all such lines gives them back as they are: a summary of non-blank input is never empty."""
    found = _content_sentences(sources)
    substantial = [s for s in found if s.words >= MIN_WORDS]
    return substantial or found or _every_piece(sources)


def _content_sentences(sources: list[tuple[str, str]]) -> list[Sentence]:
    found: list[Sentence] = []
    for index, (source_id, text) in enumerate(sources):
        lines = "\n".join(_MARKER.sub("", line) for line in unwrap(text).split("\n"))
        for position, raw in enumerate(_SPLIT.split(lines)):
            sentence = " ".join(raw.split())
            if not sentence or sentence.startswith("#") or _RANGE.search(sentence) \
                    or _LIMIT.search(sentence) or _MARKUP.match(sentence):
                continue
            found.append(Sentence(index, position, source_id, sentence, len(sentence.split())))
    return found


def _every_piece(sources: list[tuple[str, str]]) -> list[Sentence]:
    found: list[Sentence] = []
    for index, (source_id, text) in enumerate(sources):
        for position, raw in enumerate(_SPLIT.split(text)):
            if piece := " ".join(raw.split()):
                found.append(Sentence(index, position, source_id, piece, len(piece.split())))
    return found


def request_sentences(request: LLMRequest) -> list[Sentence]:
    """The sentences of the sources (of the prompt for a request without any); sources that
    are all blank give none: the prompt's instructions are no summary of them."""
    return sentences_of(list(request.sources) or [(request.label or "prompt", request.prompt)])


def topic_line(texts: list[str], most: int = 5) -> str:
    """`# Topics: …`: the key phrases shared by most of `texts`, the rarer across them first
    among equals; an empty string when no phrase recurs."""
    bags = [phrases(t) for t in texts]
    df = Counter(p for bag in bags for p in bag)
    total = Counter()
    for bag in bags:
        total.update(bag)
    floor = 2  # a phrase said once is an aside
    ranked = sorted((p for p in total if total[p] >= floor),
                    key=lambda p: (-df[p] * (1 + p.count(" ")), -total[p], p))
    chosen: list[str] = []
    for phrase in ranked:
        if any(set(phrase.split()) & set(c.split()) for c in chosen):
            continue  # "lumen" beside "lumen labs" says nothing more
        chosen.append(phrase)
        if len(chosen) == most:
            break
    return f"# Topics: {', '.join(chosen)}" if chosen else ""


def _vectors(sentences: list[Sentence]) -> np.ndarray:
    import numpy as np

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


def select(sentences: list[Sentence], budget: int) -> list[Sentence]:
    """Greedy: best-scoring sentences that fit the word budget and repeat nothing chosen."""
    if not sentences:
        return []
    import numpy as np

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
        return [Sentence(best.source_index, best.position, best.source_id, cut, budget)]
    return [sentences[i] for i in sorted(chosen, key=lambda i: (sentences[i].source_index,
                                                                sentences[i].position))]


def render(selected: list[Sentence], attribute: bool) -> str:
    if not attribute:
        return " ".join(s.text for s in selected)
    lines: list[str] = []
    run: list[Sentence] = []
    for sentence in selected + [None]:  # sentinel flushes the last run
        if run and (sentence is None or sentence.source_id != run[0].source_id):
            lines.append(" ".join(s.text for s in run) + f" [{run[0].source_id}]")
            run = []
        if sentence is not None:
            run.append(sentence)
    return "\n".join(lines)
