"""The offline memory document a fold builds: sections, every line copied from an input."""
from __future__ import annotations

import re

from synix_resources.llm.extractive import ExtractiveClient
from synix_resources.llm.memory_doc import NOTE, OPEN, RECENT, TOPICS, WHO
from synix_resources.llm.types import LLMRequest

MONTHS = {
    "monthly-jan": ("2025-01", """I'm training for the Berlin marathon in September. My long run is
12 miles this week at an easy pace. I work as a data engineer at Northwind. The sourdough starter
I made last week finally doubled overnight. [episodes-a]"""),
    "monthly-feb": ("2025-02", """The marathon long run reached 16 miles without knee pain. I baked a
rye sourdough loaf for my sister's birthday. Should I switch to carbon plated shoes for the
marathon? [episodes-b]"""),
    "monthly-mar": ("2025-03", """I plan to run a half marathon tune-up race in April. The sourdough
loaf came out dense because the kitchen was cold. Next I want to try a longer cold retard for the
rye sourdough. My manager asked me to lead the pipeline migration. [episodes-c]"""),
}
PROMPT = "Rewrite the core memory (200-350 words) so it includes what the new rollup adds."


def fold(months=MONTHS):
    client, state = ExtractiveClient(), None
    for rollup_id, (period, text) in months.items():
        prior = [("state", state)] if state else []
        state = client.complete(LLMRequest(PROMPT, sources=[*prior, (rollup_id, text)], shape="memory",
                                           source_dates={rollup_id: period}, label=f"core/{period}")).text
    return state


def sentence_of(bullet: str) -> str:
    """The copied sentence of a bullet: after a topic's "name (periods): ", before its "(period)"."""
    return re.match(r"^- (?:[^():]+ \([^()]*\): )?(.+) \([^()]*\)$", bullet).group(1)


def bullets(doc: str) -> list[str]:
    return [line for line in doc.splitlines() if line.startswith("- ")]


def test_folded_memory_has_its_sections_and_says_it_is_extractive():
    doc = fold()
    assert doc.startswith(NOTE)
    headings = [line[3:] for line in doc.splitlines() if line.startswith("## ")]
    assert headings == [WHO, TOPICS, f"{RECENT} (2025-03)", OPEN]


def test_every_memory_line_is_a_sentence_of_an_input_with_its_period():
    doc = fold()
    inputs = {period: " ".join(text.split()) for period, text in MONTHS.values()}
    for line in bullets(doc):
        sentence, period = sentence_of(line), line.rsplit(" (", 1)[1].rstrip(")")
        assert sentence in inputs[period], line  # copied from the input of the period it names


def test_recurring_topics_list_every_period_they_come_up_in():
    topics = doc_section(fold(), TOPICS)
    marathon = [line for line in topics if line.startswith("- marathon")]
    assert marathon and "(2025-01, 2025-02, 2025-03)" in marathon[0]
    assert any(line.startswith("- ") and "sourdough" in line.split(":")[0] for line in topics)


def test_open_threads_hold_plans_and_questions():
    threads = " ".join(doc_section(fold(), OPEN))
    assert "I plan to run a half marathon tune-up race in April." in threads
    assert "Should I switch to carbon plated shoes for the marathon?" in threads


def test_memory_fits_the_word_budget_and_is_deterministic():
    doc = fold()
    assert doc == fold()
    assert sum(len(line.split()) for line in bullets(doc)) <= 350
    small = ExtractiveClient().complete(LLMRequest(
        "Rewrite it to at most 60 words, keeping the most specific and durable facts.",
        sources=[("state", doc)], shape="memory")).text
    assert sum(len(line.split()) for line in bullets(small)) <= 60
    assert {sentence_of(b) for b in bullets(small)} <= {sentence_of(b) for b in bullets(doc)}


def test_a_rollup_opens_with_the_key_phrases_of_its_inputs():
    resp = ExtractiveClient().complete(LLMRequest(
        "Write a monthly rollup (150-300 words).", shape="rollup",
        sources=[(rid, text) for rid, (_, text) in MONTHS.items()]))
    headline, *rest = resp.text.splitlines()
    assert headline.startswith("# Topics: ") and "marathon" in headline
    assert rest and all(re.search(r"\[monthly-\w+\]$", line) for line in rest)


def doc_section(doc: str, title: str) -> list[str]:
    out, inside = [], False
    for line in doc.splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(title)
        elif inside and line:
            out.append(line)
    return out


def test_demo_core_built_offline_is_the_sectioned_document_of_its_monthly_rollups(demo_project, monkeypatch):
    from synix_assets.app.run import run_build
    from synix_resources.store.artifact_store import ArtifactStore

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    run_build(demo_project)
    store = ArtifactStore(demo_project.store)
    core = store.current("core", "all")
    assert core.metadata["meta.step.model"] == "extractive-v2" and core.content.startswith(NOTE)
    assert {f"## {WHO}", f"## {TOPICS}", f"## {OPEN}"} <= set(core.content.splitlines())
    months = {m.metadata["meta.time.period"]: " ".join(m.content.split()) for m in store.list_layer("monthly")}
    assert all(m.startswith("# Topics: ") for m in months.values())
    for line in bullets(core.content):
        period = line.rsplit(" (", 1)[1].rstrip(")")
        assert sentence_of(line) in months[period], line
