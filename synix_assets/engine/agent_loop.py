"""One synthesis loop of an agent step (Syke's, design 003): the model is shown the map, the new
evidence and the memories held, answers with tool calls, sees their results next turn, and stops
when it answers none, after `max_turns` turns or when `budget_tokens` are spent.

The tool protocol is plain text (one JSON object per answer), so it works with every provider
and through the response cache: `{"tool_calls": [{"name": ..., "arguments": {...}}]}`. Writes
go through `MemoryWriter` (the memory-ops log every door writes to), tagged with the step and
the loop; the store's agent records are synced after each turn so the next turn reads them.
A call that fails (unknown tool, bad arguments, a refused write) comes back as its error.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from synix_assets.engine.agent_memory import reads
from synix_resources.agent_memory import MEMORY_LAYER
from synix_resources.agent_memory.replay import MAX_CONTENT_CHARS, text
from synix_resources.errors import SynixError
from synix_resources.llm.types import LLMRequest

TOOL_SPECS = {
    "get_map": "get_map() - the map you wrote last",
    "search_memories": "search_memories(query, limit=10) - memories held that match (BM25)",
    "get_memory": "get_memory(memory_id) - one memory with its versions and evidence",
    "follow_links": "follow_links(memory_id) - the memories linked to it, with reasons",
    "get_memory_history": "get_memory_history(memory_id) - its supersession chain",
    "create_memory": "create_memory(content, evidence=[record ids], valid_from=None) - a new memory",
    "update_memory": "update_memory(memory_id, content, evidence=[], valid_from=None) - minor edit",
    "supersede_memory": "supersede_memory(memory_id, content, reason, evidence=[], valid_from=None)"
                        " - the fact changed: a new memory replaces it, history kept",
    "deactivate_memory": "deactivate_memory(memory_id, reason) - no longer true (kept in history)",
    "create_link": "create_link(source_id, target_id, reason) - relate two memories",
    "write_map": "write_map(content) - replace the map (a compact navigational index)",
}
WRITES = ("create_memory", "update_memory", "supersede_memory", "deactivate_memory", "create_link")
HELD_SHOWN = 200  # memories listed in a turn's prompt (the rest are found with search_memories)
_OBJECT = re.compile(r"\{.*\}", re.S)


def protocol(tools: list[str]) -> str:
    specs = "\n".join(f"- {TOOL_SPECS[t]}" for t in tools)
    return ("TOOLS. Answer with ONE JSON object and nothing else:\n"
            '{"tool_calls": [{"name": "create_memory", "arguments": {"content": "...", '
            '"evidence": ["..."]}}]}\nCalls run in order; their results come back next turn. '
            'Answer {"tool_calls": []} when you are done.\n' + specs)


def parse_calls(answer: str) -> list[dict]:
    """The tool calls of a model's answer ([] = done); ValueError names what is wrong."""
    found = _OBJECT.search(answer or "")
    if found is None:
        return []
    try:
        data = json.loads(found.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc.msg} at {exc.pos})") from None
    calls = data.get("tool_calls") if isinstance(data, dict) else None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise ValueError('the answer has no "tool_calls" list of objects')
    return calls


@dataclass
class LoopState:
    """What a loop did: its turns (calls and results), ops written, the map, the spend."""
    map_text: str
    turns: list[dict] = field(default_factory=list)
    op_ids: list[str] = field(default_factory=list)
    map_written: bool = False
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    stopped: str = "done"
    last = None  # the last LLMResponse (its audit becomes the records')


class Tools:
    """The tools of one loop, bound to the build's store and a tagged writer."""

    def __init__(self, ctx, writer, allowed: list[str], state: LoopState):
        self.ctx, self.writer, self.allowed, self.state = ctx, writer, allowed, state

    def run(self, call: dict) -> dict:
        name, args = call.get("name"), call.get("arguments") or {}
        if name not in self.allowed:
            return {"tool": name, "error": f"unknown tool {name!r}; use one of {', '.join(self.allowed)}"}
        if not isinstance(args, dict):
            return {"tool": name, "error": "arguments must be a JSON object"}
        try:
            result = self._dispatch(name, args)
        except TypeError as exc:  # missing or unexpected arguments
            return {"tool": name, "error": f"bad arguments: {exc}"}
        except SynixError as err:
            return {"tool": name, "error": err.one_line()}
        if name in WRITES:
            self.state.op_ids.append(result["op_id"])
        return {"tool": name, "result": result}

    def _dispatch(self, name: str, args: dict):
        store = self.ctx.store
        if name == "write_map":
            self.state.map_text = text(args.get("content"), "map", MAX_CONTENT_CHARS)
            self.state.map_written = True
            return {"map": "written", "chars": len(self.state.map_text)}
        if name == "get_map":
            return {"map": self.state.map_text}
        if name == "search_memories":
            return reads.search_memories(store, args["query"], limit=min(int(args.get("limit", 10)), 50))
        if name == "get_memory":
            return reads.get_memory(store, args["memory_id"])
        if name == "follow_links":
            return reads.follow_links(store, args["memory_id"])
        if name == "get_memory_history":
            return reads.memory_history(store, args["memory_id"])
        return getattr(self.writer, name)(**args)

    def sync(self) -> None:
        """Make the store's agent records what the log says (this turn's writes readable)."""
        self.writer.sync_records(self.ctx.store)


def held_memories(store) -> list[tuple[str, str]]:
    """(memory id, content) of the memories held now, oldest first."""
    arts = [a for a in store.list_layer(MEMORY_LAYER) if a.metadata.get("state") == "active"]
    arts.sort(key=lambda a: (a.metadata.get("valid_from") or "", a.group_key))
    return [(a.group_key, a.content) for a in arts]


def turn_request(base: str, tools: list[str], held: list[tuple[str, str]], state: LoopState,
                 evidence: list[tuple[str, str]], settings: dict, label: str,
                 template_hash: str) -> LLMRequest:
    """One turn's request. `sources` carries the same parts by name (the map, the evidence, the
    memories held, each earlier turn's results) for providers that read them, not the prompt."""
    index = "\n".join(f"[{mid}] {content.splitlines()[0][:160] if content else ''}"
                      for mid, content in held[-HELD_SHOWN:]) or "(none yet)"
    past = "\n".join(f"TURN {i + 1}\ncalls: {json.dumps(t['calls'])}\nresults: {json.dumps(t['results'], default=str)[:6000]}"
                     for i, t in enumerate(state.turns))
    prompt = (f"{base}\n\n{protocol(tools)}\n\nMEMORIES HELD ({len(held)}, id and first line):\n"
              f"{index}\n\nTURNS SO FAR:\n{past or '(this is the first turn)'}")
    sources = [("__map__", state.map_text), *evidence, *held,
               *((f"__turn__/{i + 1}", json.dumps(t["results"], default=str)) for i, t in enumerate(state.turns))]
    return LLMRequest(prompt=prompt, system=settings["system"], model=settings["model"],
                      temperature=settings["temperature"], max_tokens=settings["max_tokens"],
                      label=label, sources=sources, template_hash=template_hash, shape="agent")


def run_loop(ctx, tools: Tools, step, base: str, evidence: list[tuple[str, str]], label: str,
             template_hash: str) -> LoopState:
    """Turns until the model answers no call, `max_turns` or `budget_tokens` (LLMError raises)."""
    state, cfg = tools.state, step.config
    settings = ctx.pipeline.llm_settings(step)
    for turn in range(cfg["max_turns"]):
        if state.tokens_in + state.tokens_out >= cfg["budget_tokens"]:
            state.stopped = f"budget of {cfg['budget_tokens']} tokens spent"
            return state
        req = turn_request(base, cfg["tools"], held_memories(ctx.store), state, evidence,
                           settings, f"{label}/turn-{turn + 1}", template_hash)
        resp = state.last = ctx.llm.complete(req)
        state.calls += 0 if resp.from_cache else 1
        state.tokens_in += resp.input_tokens
        state.tokens_out += resp.output_tokens
        state.cost_usd += resp.cost_usd
        try:
            calls = parse_calls(resp.text)
        except ValueError as exc:
            state.turns.append({"calls": [], "results": [{"error": f"{exc}; answer one JSON object"}]})
            continue
        if not calls:
            return state
        results = [tools.run(c) for c in calls]
        state.turns.append({"calls": calls, "results": results})
        if any(c.get("name") in WRITES for c in calls):
            tools.sync()
    state.stopped = f"max_turns {cfg['max_turns']} reached"
    return state
