"""Known-item questions from a built project (`app/known_item.py`): picked deterministically,
three words rare across the corpus from each conversation's own messages, and recall@k that
counts only a record of that conversation (or a narrow rollup), never the core over all."""
from __future__ import annotations

import pytest

TOPICS = ["quokka marmalade trebuchet", "zeppelin ukulele paprika", "origami walrus saffron",
          "kayak tamarind glockenspiel", "falafel sextant mongoose", "tuba quinoa lighthouse",
          "banjo cormorant pistachio", "yodel turnip hovercraft", "gazebo lemur wasabi",
          "harpoon nutmeg tapestry", "igloo mandolin cardamom", "parsnip gondola xylophone"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import os

    from synix_assets.app.init import init_project
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths
    from tests.conftest import _conversation, _make_claude_export

    base = tmp_path_factory.mktemp("known")
    convs = [_conversation(f"conv{i}", f"Chat {i}", f"2024-0{1 + i % 9}-1{i % 10}", words)
             for i, words in enumerate(TOPICS)]
    export = _make_claude_export(base / "claude.json", convs)
    saved = os.environ.get("SYNIX_LLM_PROVIDER")
    os.environ["SYNIX_LLM_PROVIDER"] = "fake"
    try:
        paths = ProjectPaths(init_project(base / "mem", exports=[export]))
        run_build(paths)
    finally:
        os.environ.pop("SYNIX_LLM_PROVIDER") if saved is None else os.environ.update(SYNIX_LLM_PROVIDER=saved)
    return paths


def test_questions_are_rare_words_of_each_conversations_own_messages_picked_deterministically(built):
    from synix_assets.app.known_item import known_items, read_corpus

    corpus = read_corpus(built)
    items = known_items(corpus, 8)
    assert len(items) == 8 and items == known_items(corpus, 8)  # the same seed, the same questions
    assert [i.conversation_id for i in known_items(corpus, 8, seed=1)] != [i.conversation_id for i in items]
    for item in items:
        topic = TOPICS[int(item.conversation_id.removeprefix("conv"))]
        assert set(item.words) == set(topic.split()) and item.query.count(" ") == 2


def test_recall_counts_the_conversations_own_records_not_the_core_over_everything(built):
    from synix_assets.app.known_item import known_items, read_corpus, recall_at
    from synix_assets.app.query import search_view

    corpus = read_corpus(built)
    items = known_items(corpus, 12)
    by_words = {i.query: i.transcript_id for i in items}
    core = [aid for aid, convs in corpus.covers.items() if len(convs) == 12]
    assert core  # the core covers every conversation
    assert recall_at(corpus, items, lambda q: [by_words[q]])["recall"] == 1.0
    missed = recall_at(corpus, items, lambda q: core)
    assert missed["recall"] == 0.0 and len(missed["missed"]) == 12
    default = recall_at(corpus, items, lambda q: [h["artifact_id"] for h in
                                                  search_view(built, q, trees=False)["hits"]])
    assert default["recall"] == 1.0, default["missed"]
