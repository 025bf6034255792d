"""Synix synapse pipeline (the Synapse architecture, design 004): a live working window — the
last 12 turns of a session verbatim and a rolling summary into which older turns are folded
exactly once — with open loops (commitments, todos, questions: open / reinforced / completed,
nudges when idle) and identity facts in the brief's Tier 1; closed sessions and exports build
episodes → monthly rollups → core memory as usual.

Offline (no model) the rolling summary is extractive (one line per folded turn) and loops and
facts come from rules ("I will / I'll / remind me / TODO / need to", "my name is", "I live in");
every Tier 1 record says which extractor made it. Edit freely: this file is your architecture.
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

pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
pipeline.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)
pipeline.fold("core", from_="monthly", prompt=prompts.core_memory, checkpoint_every=6)

pipeline.search_index("memory-index", from_=["episodes", "monthly", "core"])
pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)
