"""What the `fake` provider answers an agent step's turn (`request.shape == "agent"`): tool
calls decided from the request's named sources alone, so tests drive the synthesis loop
deterministically with no model.

Turn 1 (no earlier turn): for each evidence record, its first sentence is a fact; a memory held
that shares at least half of the fact's words (by the smaller set) is superseded by it (the
fact changed), one saying exactly the same is left alone, otherwise the fact is created. Turn 2:
the memories turn 1 wrote are linked in order, and the map is rewritten (one line per memory
held). Turn 3: no calls (done).
"""
from __future__ import annotations

import json
import re

from .types import LLMRequest

_WORD = re.compile(r"[a-z][a-z0-9'-]{2,}")
_STOP = frozenset("the and for with that this from have has was were are about summary fake".split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _fact(content: str) -> str:
    return re.split(r"(?<=[.!?])\s+|\n+", content.strip())[0][:300]


def agent_answer(request: LLMRequest) -> str:
    evidence, held, turns = [], [], []
    for sid, content in request.sources:
        if sid.startswith("__turn__/"):
            turns.append(json.loads(content))
        elif sid.startswith("mem-"):
            held.append((sid, content))
        elif sid != "__map__":
            evidence.append((sid, content))
    if not turns:
        return json.dumps({"tool_calls": _evolve(evidence, held)})
    if any(r.get("tool") == "write_map" for t in turns for r in t):
        return json.dumps({"tool_calls": []})
    made = [r["result"].get("new_id") or r["result"].get("memory_id") for r in turns[0]
            if r.get("tool") in ("create_memory", "supersede_memory") and "result" in r]
    calls = [{"name": "create_link", "arguments": {"source_id": a, "target_id": b,
                                                   "reason": "learned from the same evidence batch"}}
             for a, b in zip(made, made[1:])]
    index = "\n".join(f"[{mid}] {content[:100]}" for mid, content in held)
    calls.append({"name": "write_map", "arguments": {"content": f"# Map ({len(held)} memories)\n{index}"}})
    return json.dumps({"tool_calls": calls})


def _evolve(evidence: list[tuple[str, str]], held: list[tuple[str, str]]) -> list[dict]:
    calls, taken = [], set()
    for sid, content in evidence:
        fact = _fact(content)
        if not fact or any(fact == c for _, c in held):
            continue
        words = _words(fact)
        same = next((mid for mid, c in held if mid not in taken and words and _words(c)
                     and len(words & _words(c)) * 2 >= min(len(words), len(_words(c)))), None)
        if same is not None:
            taken.add(same)
            calls.append({"name": "supersede_memory", "arguments": {
                "memory_id": same, "content": fact, "reason": f"newer evidence {sid}",
                "evidence": [sid]}})
        else:
            calls.append({"name": "create_memory", "arguments": {"content": fact, "evidence": [sid]}})
    return calls
