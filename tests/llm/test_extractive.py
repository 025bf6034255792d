"""extractive provider: real sentence selection, offline and deterministic."""
from __future__ import annotations

import re

import pytest

from synix_resources.errors import LLMRefusal
from synix_resources.llm.extractive import ExtractiveClient, target_words
from synix_resources.llm.types import LLMRequest

TRIP = """We planned a trip to Lisbon for the second week of May. The flights from Berlin cost
about 180 euros each way. Maria booked a small apartment in Alfama near the castle. We want to
visit the Gulbenkian museum and take the tram to Belem. The weather in May should be warm and
mostly dry. Maria also wants a day trip to Sintra to see the palaces. I should renew my passport
before April because it expires in June. The budget for the whole trip is around 1500 euros."""

COMPILER = """I am writing a toy compiler in Rust for a small expression language. The parser uses
Pratt parsing for operator precedence. Type checking happens in a separate pass over the AST. The
code generator emits WebAssembly text format. Error messages currently lack source spans, which
makes debugging painful. Next I want to add closures and a simple garbage collector."""


def words(text: str) -> int:
    return len(re.sub(r"\[[^\]]*\]", "", text).split())


def sentences_of(text: str) -> set[str]:
    return {" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text)}


def test_output_depends_on_input():
    client = ExtractiveClient()
    a = client.complete(LLMRequest("Summarise in at most 40 words.", sources=[("c1", TRIP)]))
    b = client.complete(LLMRequest("Summarise in at most 40 words.", sources=[("c2", COMPILER)]))
    assert a.text != b.text and "Lisbon" in a.text or "Maria" in a.text
    assert "compiler" in b.text.lower() or "parser" in b.text.lower()


def test_every_output_sentence_comes_from_the_input():
    resp = ExtractiveClient().complete(LLMRequest("x", sources=[("c1", TRIP)], max_words=60))
    flat = " ".join(TRIP.split())
    chosen = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", resp.text)]
    assert chosen and set(chosen) <= sentences_of(flat)
    positions = [flat.index(s) for s in chosen]
    assert positions == sorted(positions)  # original order is kept


def test_respects_requested_length_from_max_words_and_prompt_ranges():
    client = ExtractiveClient()
    long_input = " ".join([TRIP, COMPILER] * 3)
    assert words(client.complete(LLMRequest("x", sources=[("c", long_input)],
                                            max_words=30)).text) <= 30
    req = LLMRequest("Write a summary of 20-45 words.\n\n" + long_input)
    assert target_words(req) == 45
    assert 0 < words(client.complete(req).text) <= 45
    assert target_words(LLMRequest("Summarise in no more than 25 words: ...")) == 25
    short = client.complete(LLMRequest("x", sources=[("c", long_input)], max_words=25)).text
    longer = client.complete(LLMRequest("x", sources=[("c", long_input)], max_words=90)).text
    assert words(short) < words(longer)


def test_redundant_sentences_are_not_repeated():
    text = TRIP + " We planned a trip to Lisbon for the second week of May, we planned it."
    resp = ExtractiveClient().complete(LLMRequest("x", sources=[("c", text)], max_words=200))
    assert resp.text.count("trip to Lisbon") == 1


def test_deterministic():
    req = LLMRequest("Summarise (50-80 words).", sources=[("a", TRIP), ("b", COMPILER)])
    assert ExtractiveClient().complete(req).text == ExtractiveClient().complete(req).text


def test_attribution_names_each_source_and_labels_itself_extractive():
    resp = ExtractiveClient().complete(LLMRequest(
        "Summarise the month in 60-90 words.", sources=[("conv-a", TRIP), ("conv-b", COMPILER)],
        model="claude-sonnet-4-6"))
    assert resp.source_ids == ("conv-a", "conv-b")
    for line in resp.text.splitlines():
        source = re.search(r"\[(conv-[ab])\]$", line).group(1)
        body = line.rsplit(" [", 1)[0]
        assert body.split(". ")[0] in " ".join((TRIP if source == "conv-a" else COMPILER).split())
    audit = resp.audit()
    assert audit["provider"] == "extractive" and audit["model"] == "extractive-v2"
    assert audit["cost_usd"] == 0 and audit["temperature"] is None
    assert "extractive" in audit["flags"]


def test_prompt_without_sources_skips_instructions():
    resp = ExtractiveClient().complete(LLMRequest(
        "Summarise this conversation in 30-60 words.\n\n" + COMPILER, label="conv-x"))
    assert "Summarise" not in resp.text and resp.source_ids == ("conv-x",)


# A rollup of a conversation that is all code: one `# Topics:` line, then one run of statements
# with no sentence end in 150 words (the shape of a real one-conversation Claude export's month).
CODE_ROLLUP = "# Topics: llm pricing calculator, input, output\n" + " ".join(
    f"const cost{i} = parseFloat(document.getElementById('cost{i}').value) || 0;" for i in range(40))


def test_a_fold_over_a_rollup_of_code_alone_is_never_empty():
    resp = ExtractiveClient().complete(LLMRequest(
        "Fold this month into the memory.", sources=[("monthly-2024-10", CODE_ROLLUP)],
        shape="memory", source_dates={"monthly-2024-10": "2024-10"}, label="core/2024-10"))
    assert "parseFloat(document.getElementById('cost0')" in resp.text
    assert "empty_output" not in resp.flags


def test_a_heading_does_not_swallow_the_line_after_it():
    text = "# Topics: rust, compilers and parsers\nThe parser uses Pratt parsing for precedence today"
    resp = ExtractiveClient().complete(LLMRequest("x", sources=[("c", text)], max_words=40))
    assert resp.text == "The parser uses Pratt parsing for precedence today"


def test_input_of_headings_and_source_markers_alone_still_gives_its_text():
    for shape in ("", "rollup", "memory"):
        resp = ExtractiveClient().complete(LLMRequest(
            "x", sources=[("c", "# Lisbon trip\n[episodes-0123456789abcdef]")], shape=shape))
        assert "Lisbon trip" in resp.text, shape


def test_blank_sources_are_refused_not_summarised_from_the_instructions():
    with pytest.raises(LLMRefusal, match="returned empty output for episodes/c"):
        ExtractiveClient().complete(LLMRequest(
            "Summarise in at most 40 words. Maria booked a small apartment in Alfama.",
            sources=[("c", "  \n ")], label="episodes/c"))
