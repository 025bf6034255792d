"""Topical rollups: membership through the episode index, and topic discovery."""
from __future__ import annotations

from synix_assets.engine.topics import discover


TEXTS = [
    "Sam planned the marathon long run and the taper week before the race.",
    "The marathon race pacing plan and carb loading for the long run.",
    "Sourdough starter hydration and the bulk ferment for the rye loaf.",
    "Shaping the sourdough boule and the cold retard overnight.",
    "Negotiating the offer letter and equity vesting with the hiring manager.",
    "The hiring manager sent the offer letter after the system design round.",
]


def test_auto_topics_are_deterministic_and_cover_the_corpus():
    topics = discover(TEXTS)
    assert topics == discover(list(TEXTS))
    assert 2 <= len(topics) <= 8
    terms = {w for t in topics for w in t.split()}
    for text in TEXTS:  # every document is about at least one discovered topic
        assert terms & set(text.lower().replace(".", "").split()), text


def test_auto_topics_of_an_empty_corpus_is_empty():
    assert discover([]) == []


def test_topic_membership_keeps_episodes_about_the_topic(demo_project, monkeypatch):
    from synix_assets.app.init import switch_template
    from synix_assets.app.run import run_build
    from synix_resources.store.artifact_store import ArtifactStore

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")  # episodes made of real sentences
    switch_template(demo_project.root, "topical")
    run_build(demo_project)
    store = ArtifactStore(demo_project.store)
    baking = store.current("topics", "sourdough bread baking")
    titles = {p.metadata["meta.chat.title"] for p in store.parents(baking.artifact_id)}
    assert {"Rye sourdough with Gus", "Sourdough starter feeding schedule",
            "Sourdough schedule around the move"} <= titles
    assert "Negotiation email to Lumen Labs" not in titles


def test_auto_topics_build_one_rollup_per_discovered_topic_through_dagster(demo_project, monkeypatch):
    from synix_assets.app.run import run_build
    from synix_assets.dagster_defs.assets import layer_key
    from synix_assets.app.init import switch_template
    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_resources.store.artifact_store import ArtifactStore

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    switch_template(demo_project.root, "topical")
    text = (demo_project.root / "pipeline.py").read_text()
    start = text.index("topics=[")
    end = text.index("])", start) + 1
    (demo_project.root / "pipeline.py").write_text(text[:start] + 'topics="auto"' + text[end:])
    report = run_build(demo_project)
    store = ArtifactStore(demo_project.store)
    topics = store.list_layer("topics")
    assert report.layers["topics"]["built"] == len(topics) >= 3
    instance = dagster_instance(demo_project)
    assert set(instance.get_dynamic_partitions("topics_topics")) >= {t.group_key for t in topics}
    assert len(instance.get_materialized_partitions(layer_key("topics"))) == len(topics)
    again = run_build(demo_project)
    assert again.to_json()["llm_calls"] == 0


CHATTY = [  # chat filler and contractions everywhere; the topics are in the nouns
    "I'll keep the marathon long run around 18 miles, let's start the taper after that.",
    "Sure, here's the plan: keep the marathon pace easy and start the long run early.",
    "I'll start a sourdough starter and keep the sourdough loaf in a warm spot around noon.",
    "Let's keep going: the sourdough starter doubled, I'll bake the sourdough loaf tomorrow.",
    "Here's how you'd fix the rust borrow checker error: keep one mutable borrow around.",
    "I'll start over; the rust borrow checker still complains, let's keep the lifetimes explicit.",
]


def test_auto_topic_names_are_content_phrases_never_filler_or_contractions():
    from synix_resources.keyphrases import STOP_WORDS

    topics = discover(CHATTY, titles=["Marathon taper", "Marathon pacing", "Sourdough starter",
                                      "Sourdough bake", "Rust borrow checker", "Borrow checker again"])
    assert len(topics) == 3, topics
    for expected in ("marathon", "sourdough", "borrow"):
        assert any(expected in t.split() for t in topics), (expected, topics)
    for name in topics:
        assert not set(name.split()) & STOP_WORDS and "'" not in name, name


def test_titles_weigh_more_than_the_body_in_a_topic_name():
    texts = ["We compared the tram and the bus.", "The tram was faster than the bus."]
    assert discover(texts, titles=["Lisbon transport", "Lisbon transport"]) == ["lisbon transport"]
