"""Synix live pipeline: agents post turns (`POST /v1/tenants/{tenant}/ingest`), closed sessions
become conversations → episodes → monthly rollups → core memory (docs/live.md).

Edit freely: this file is this memory's architecture. Relative paths resolve next to this file.
"""
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("live-memory", agent="agent")

# The closed sessions of this memory's live inbox (.synix/live/inbox.db), one conversation each.
pipeline.source("live", kind="live")

# Level 0: one transcript per session; a reopened session's newest version replaces the old one.
pipeline.merge("transcripts", from_=["live"], dedupe="metadata_match",
               fields=["conversation_id"], conflict="prefer_latest")

pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
pipeline.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)
pipeline.fold("core", from_="monthly", prompt=prompts.core_memory, checkpoint_every=6)

pipeline.search_index("memory-index", from_=["episodes", "monthly", "core"])
pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)
