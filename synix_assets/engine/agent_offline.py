"""An agent step without a model (the extractive provider): the synthesis loop's writes made
deterministically, through the same tools (so they land in the memory-ops log with provenance
like a model's): one memory per key sentence of each new record, valid from the record's date,
skipped when a memory held says exactly the same; then the map, the memories held grouped by
their most shared key word. No judgement: nothing is superseded, deactivated or linked."""
from __future__ import annotations

import re
from collections import Counter

from synix_assets.engine.agent_loop import held_memories
from synix_resources.keyphrases import content_words

NOTE = ("offline: no model, so one memory per key sentence and a map by topic; no supersession, "
        "deactivation, links or judgement of what matters (configure a model for the synthesis loop)")
FACTS_PER_RECORD = 4
MIN_WORDS = 5
MAP_TOPICS = 30
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKER = re.compile(r"\s*\[[^\]\s]+\]\s*$|^#+\s*|^[-*•]\s*")


def key_sentences(content: str) -> list[str]:
    """The record's first FACTS_PER_RECORD distinct sentences of MIN_WORDS words or more."""
    out: list[str] = []
    for raw in _SPLIT.split(content):
        sentence = _MARKER.sub("", raw.strip()).strip()
        if len(sentence.split()) >= MIN_WORDS and sentence not in out and not sentence.startswith("Topics:"):
            out.append(sentence)
        if len(out) == FACTS_PER_RECORD:
            break
    return out


def memory_map(held: list[tuple[str, str]]) -> str:
    """Memories held, grouped under the content word most of them share."""
    words = {mid: content_words(content) for mid, content in held}
    df = Counter(w for ws in words.values() for w in ws)
    groups: dict[str, list[str]] = {}
    for mid, content in held:
        topic = max(sorted(words[mid]), key=lambda w: df[w], default="other") if words[mid] else "other"
        groups.setdefault(topic, []).append(f"[{mid}] {content.splitlines()[0][:120]}")
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    lines = [f"# Map ({len(held)} memories, offline: grouped by shared word)"]
    for topic, items in ranked[:MAP_TOPICS]:
        lines += ["", f"## {topic} ({len(items)})", *items[:8]]
        if len(items) > 8:
            lines.append(f"… {len(items) - 8} more: search_memories('{topic}')")
    if len(ranked) > MAP_TOPICS:
        lines += ["", f"{len(ranked) - MAP_TOPICS} smaller topics: use search_memories"]
    return "\n".join(lines)


def run(tools, records) -> object:
    """One loop over `records` (Record objects) with `tools` (agent_loop.Tools)."""
    state = tools.state
    said = {content for _, content in held_memories(tools.ctx.store)}
    calls = []
    for rec in records:
        for fact in key_sentences(rec.content):
            if fact in said:
                continue
            said.add(fact)
            args = {"content": fact, "evidence": [rec.artifact_id]}
            if rec.date:
                args["valid_from"] = rec.date
            calls.append({"name": "create_memory", "arguments": args})
    results = [tools.run(c) for c in calls]
    state.turns.append({"calls": calls, "results": results})
    if calls:
        tools.sync()
    map_call = {"name": "write_map", "arguments": {"content": memory_map(held_memories(tools.ctx.store))}}
    state.turns.append({"calls": [map_call], "results": [tools.run(map_call)]})
    return state
