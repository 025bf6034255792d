"""Synix reference pipeline: transcripts → episodes → monthly rollups → core memory.

Edit freely: this file is your memory architecture. Run `synix plan` to see what a change would
rebuild, `synix run` to build. Relative paths resolve next to this file.
"""
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("personal-memory", agent="me")

# Sources: every export file in exports/ (ChatGPT, Claude or Claude Code; format auto-detected).
pipeline.source("exports", path="exports", format="auto")

# Level 0: one transcript per conversation; the same conversation in two exports is merged.
pipeline.merge("transcripts", from_=["exports"], dedupe="metadata_match",
               fields=["conversation_id"], conflict="prefer_latest")

# Level 1: one episode summary per conversation. Copy a prompt function into this file and
# change it to customise it: only the layers that use it rebuild.
pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)

# Level 2: one rollup per calendar month.
pipeline.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)

# Level 3: the core memory, folded over the months in order (checkpointed every 6).
pipeline.fold("core", from_="monthly", prompt=prompts.core_memory, checkpoint_every=6)

# Projections: the agent's RAG and its system prompt.
pipeline.search_index("memory-index", from_=["episodes", "monthly", "core"])
pipeline.context_doc("context", from_="core", path="context.md", budget_tokens=4000)
