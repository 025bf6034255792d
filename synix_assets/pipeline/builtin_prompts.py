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


def syke_synthesis(memory_map: str, records: list[Record]) -> str:
    """Syke's synthesis loop (design 003): orient on the map, read the new evidence, evolve the
    memories, rewrite the map. The step appends the tools, the memories held and the turns."""
    evidence = "\n\n".join(f"<evidence id=\"{r.artifact_id}\" date=\"{r.date}\" title=\"{r.title}\">\n"
                           f"{r.content}\n</evidence>" for r in records)
    return f"""You maintain the long-term memory of a person, written as free-text memories.

STEP 1 - ORIENT. Your map of what you know so far:
<map>
{memory_map}
</map>
New evidence since your last synthesis ({len(records)} records):
{evidence}

STEP 2 - EXTRACT AND EVOLVE. For each piece of evidence decide:
a) new knowledge worth keeping -> create_memory (cite the evidence ids), and create_link to
   related memories with a plain reason;
b) it changes something you hold -> update_memory (minor) or supersede_memory (the fact changed;
   give the reason and valid_from, the date it became true);
c) it makes a memory obsolete -> deactivate_memory;
d) not worth remembering -> skip.
Prefer few, dense memories about people, projects, preferences, decisions and dated events.

STEP 3 - UPDATE THE MAP. Call write_map with a compact navigational index (not a report):
what is happening now with memory ids, patterns and threads, where to look."""


def rolling_summary(summary: str, turns: str) -> str:
    """The Synapse rolling summary (design 004 §4): the turns evicted from the working window
    folded into the summary so far, exactly once each."""
    return f"""You keep the rolling summary of a long conversation. The turns below have just left
the working window; fold them into the summary so far. Keep names, decisions, commitments and
open questions; drop small talk. Answer with the new summary only (at most 300 words).

<summary_so_far>
{summary or "(empty: these are the first turns to leave the window)"}
</summary_so_far>

<evicted_turns>
{turns}
</evicted_turns>"""


def open_loops(turns: str) -> str:
    """Procedural memory (design 004 §1): what each user turn opens, reinforces or closes, and the
    identity facts it states, as one JSON object."""
    return f"""Read the user's turns of one conversation (each starts with its [turn id]) and list,
per turn: loops it opens or repeats (a commitment "I will…", a todo, a reminder, a question the
user means to settle), loops it completes (what the user says is done), and facts about the user
(name, location, job, employer, preference).

<turns>
{turns}
</turns>

Answer with ONE JSON object and nothing else:
{{"turns": [{{"turn_id": "…", "mentions": [{{"kind": "commitment|todo|reminder|question", "text": "…"}}],
  "completes": ["what was done, in the words of the loop"],
  "facts": [{{"key": "name|location|job|employer|preference", "value": "…"}}]}}]}}
Leave out turns that say none of these."""


def temporal_facts(turns: str) -> str:
    """Temporal facts (design 004 §2, Tier 2): what each user turn states about the user, people,
    projects, places and tools, and which earlier facts it ends, as one JSON object."""
    return f"""Read the user's turns of one conversation (each starts with its [turn id]) and list
every fact a turn states about an entity: the user ("user"), a person, a project, a place or a
tool. One statement per fact, with its attribute (location, employer, role, uses, language,
editor, …) and value. op: "set" when the attribute has one value at a time (a new value replaces
the old: "I moved to Porto"), "add" when it is one of several ("I use Docker": attribute "uses"),
"end" when the turn says it no longer holds ("I no longer use Docker", "Mira left Acme").

<turns>
{turns}
</turns>

Answer with ONE JSON object and nothing else:
{{"statements": [{{"turn_id": "…", "subject": "user|a name", "attribute": "…", "value": "…",
  "op": "set|add|end"}}]}}
Leave out turns that state no fact."""
