"""Synix topical pipeline: transcripts → episodes → topical rollups → core memory.

The same as the monthly pipeline with level 2 swapped: each topic's rollup is built from the
episodes the episode search index finds for it. Switching a project between the two rebuilds
only the rollups and the core; transcripts and episodes stay cached.
"""
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("personal-memory", agent="me")

pipeline.source("exports", path="exports", format="auto")
pipeline.merge("transcripts", from_=["exports"], dedupe="metadata_match",
               fields=["conversation_id"], conflict="prefer_latest")
pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)

# Level 2: one rollup per topic, from the episodes the search index finds for it (full-text
# match on the topic's words, so name topics in the words your conversations use), or
# topics="auto" to discover topics from the episodes.
pipeline.aggregate("topics", from_="episodes", prompt=prompts.topical_rollup,
                   topics=["career and job offer", "rust programming", "marathon running",
                           "sourdough bread baking", "moving to san francisco",
                           "ai agents and memory"])

pipeline.fold("core", from_="topics", prompt=prompts.core_memory, checkpoint_every=6)

pipeline.search_index("memory-index", from_=["episodes", "topics", "core"])
pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)
