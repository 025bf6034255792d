"""Synix Syke pipeline: transcripts → episodes → agent-written memories + the map (design 003).

An agent step replaces the rollups and the core: for each batch of new episodes a model with
Syke's tools orients on its map, reads the new evidence, creates, updates, supersedes and
deactivates memories and links them (each write lands in the branch's memory-ops log, citing
the episodes it comes from), then rewrites the map. `get_map` over MCP/HTTP returns that map;
the memories are searchable beside the episodes. Offline (no model) it still builds: one
memory per key sentence of each episode and a map by topic (the plan says what it skipped).
"""
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("personal-memory", agent="me")

pipeline.source("exports", path="exports", format="auto")
pipeline.merge("transcripts", from_=["exports"], dedupe="metadata_match",
               fields=["conversation_id"], conflict="prefer_latest")
pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)

# Level 2: the synthesis loop. One loop per batch of new episodes (batch_size), at most
# max_turns model turns and budget_tokens tokens each; copy syke_synthesis into this file to
# change it (the step rebuilds: its earlier writes are taken back and everything is read again).
pipeline.agent_step("memories", from_="episodes", prompt=prompts.syke_synthesis, tools="syke",
                    max_turns=8, budget_tokens=60_000, batch_size=10)

# "memories" in a search index indexes the agent memories the step wrote.
pipeline.search_index("memory-index", from_=["episodes", "memories"])
