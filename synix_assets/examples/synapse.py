"""Synix synapse pipeline (the Synapse architecture, design 004): a working window — the last 12
turns of each conversation verbatim and a rolling summary into which older turns are folded
exactly once — with open loops (commitments, todos, questions: open / reinforced / completed,
nudges when idle) and identity facts in the brief's Tier 1, temporal facts (valid from / until,
never deleted) in its Tier 2; episodes → monthly rollups → core
memory as usual.

The window, the loops and the facts are layers of the build like any other (versioned, keyed,
incremental, forgotten with their conversation, in lineage and the Dagster graph); the live
inbox keeps the same window and loops between builds with the same rules. Offline (no model)
the rolling summary is extractive (one line per folded turn) and loops and facts come from
rules ("I will / I'll / remind me / TODO / need to", "my name is", "I live in"); every record
says which extractor made it. Edit freely: this file is your architecture.
"""
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("synapse-memory", agent="agent")

# Exports in exports/ (if any) and the live inbox (.synix/live/inbox.db; POST …/ingest).
pipeline.source("exports", path="exports", format="auto")
pipeline.source("live", kind="live", window=12)

# Level 0: one transcript per conversation or session (a reopened session's newest version wins).
pipeline.merge("transcripts", from_=["exports", "live"], dedupe="metadata_match",
               fields=["conversation_id"], conflict="prefer_latest")

# Tier 1 (design 004): the rolling summary (one call per fold: each grown session folds only the
# turns evicted since), open loops + the facts each turn states (one call per conversation), and
# identity facts replayed from those readings (no call).
pipeline.window_fold("rolling", from_="transcripts", prompt=prompts.rolling_summary, window=12)
pipeline.open_loops("loops", from_="transcripts", prompt=prompts.open_loops)
pipeline.identity_facts("identity", from_="loops")

# Tier 2 (design 004 §2): temporal facts about the user, people, projects, places and tools, each
# valid from the turn that states it until a later one contradicts it (kept, with valid_until),
# citing its turns; one call per conversation (rules offline). `implies=[...]` declares rules
# ("employer=Acme -> office=Lisbon") whose facts hold exactly while their premise does.
pipeline.facts("facts", from_="transcripts", prompt=prompts.temporal_facts)

pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
pipeline.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)
pipeline.fold("core", from_="monthly", prompt=prompts.core_memory, checkpoint_every=6)

pipeline.search_index("memory-index", from_=["episodes", "monthly", "core"])
pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)
