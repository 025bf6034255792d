"""The reference prompts (design doc 002, "Prompt Templates").

Each is a plain function; its source hash is its version, so editing one here or copying it into
your pipeline.py and changing it rebuilds exactly the layers that use it.
"""
from __future__ import annotations

from synix_assets.pipeline.records import Record


def episode_summary(record: Record) -> str:
    return f"""You are summarizing a conversation between a user and an AI assistant.

<conversation title="{record.title}" date="{record.date}">
{record.content}
</conversation>

Write a concise episode summary (120-200 words) that captures:
1. The main topics discussed
2. Key decisions, insights, or conclusions reached
3. Any action items or commitments made
4. The emotional tone and context of the conversation

Write in third person. Focus on information that would be useful for long-term memory."""


def monthly_rollup(records: list[Record], period: str) -> str:
    episodes = "\n\n".join(f"<episode date=\"{r.date}\" title=\"{r.title}\">\n{r.content}\n</episode>"
                           for r in records)
    return f"""You are synthesizing {len(records)} conversation summaries from {period} into a monthly overview.

<episode_summaries>
{episodes}
</episode_summaries>

Write a monthly rollup (150-300 words) that captures:
1. Major themes and recurring topics this month
2. How the user's thinking evolved across conversations
3. Key decisions and their context
4. Important facts, preferences, or relationships mentioned

Prioritize information that builds a coherent picture of this period. Deduplicate across episodes."""


def topical_rollup(records: list[Record], topic: str) -> str:
    episodes = "\n\n".join(f"<episode date=\"{r.date}\" title=\"{r.title}\">\n{r.content}\n</episode>"
                           for r in records)
    return f"""You are synthesizing conversation summaries related to the topic: {topic}

<episode_summaries>
{episodes}
</episode_summaries>

Write a topical synthesis (150-300 words) that captures:
1. Everything the user has discussed about {topic}
2. How their views or understanding evolved over time
3. Key facts, opinions, and decisions related to {topic}
4. Connections to other topics or areas of their life

Write as a coherent narrative, not a list of conversations."""


def core_memory(record: Record, state: str) -> str:
    return f"""You are maintaining the core memory document of an AI agent about its user.

<current_core_memory>
{state}
</current_core_memory>

<new_rollup group="{record.group_key}">
{record.content}
</new_rollup>

Rewrite the core memory (200-350 words) so it includes what the new rollup adds:
1. Identity: who is this person? Background, profession, key relationships.
2. Current focus: what are they working on right now? What matters most?
3. Preferences & style: communication preferences, technical opinions, values.
4. Key history: major life events, career arc, important decisions.
5. Active threads: ongoing projects, unresolved questions, things to follow up on.

This will be placed directly in an AI agent's context window. Be specific and factual."""


def compress_state(state: str, max_tokens: int) -> str:
    return f"""The following memory document is longer than its budget of {max_tokens} tokens.

<memory>
{state}
</memory>

Rewrite it to at most {max(50, max_tokens * 3 // 4)} words, keeping the most specific and durable facts."""
