"""`synix ask "question"`: an agent that reads the memory's map, navigates it with the read
tools (Anthropic tool use), and answers citing record ids and source conversations.

Without a model (no ANTHROPIC_API_KEY, or `offline=True`) nothing is generated: the answer is
the best evidence found — memories and transcript passages with their provenance — and says so.
"""
from __future__ import annotations

import inspect
import json
import re
from typing import Any

from synix_assets.app.memory import BadRequest, MemoryService
from synix_assets.app.vocabulary import resolve, served_by
from synix_assets.serve.tools import memory_tools
from synix_resources.errors import LLMConfigError, LLMError, SynixError, UnknownParameter
from synix_resources.settings import settings

DEFAULT_MODEL = "claude-sonnet-4-6"
MAX_RESULT_CHARS = 12_000  # what one tool result may put into the conversation
_IDS = re.compile(r"\b([a-z0-9_]+(?:-[a-z0-9_]+)*-[0-9a-f]{16})\b")
SYSTEM = """You answer questions about a person using their memory, built by Synix from their \
conversations. The memory has layers: source transcripts, per-conversation episodes, rollups \
(periods or topics) and a core memory. The map below is your starting point; navigate with the \
tools (search_memories, follow, lineage, search_transcripts for the raw conversations) and check \
claims against the evidence. Answer briefly. Cite every claim with the record ids you relied on \
in square brackets, e.g. [episodes-0123456789abcdef]. If the memory does not say, say so.

MAP:
{map}"""
OFFLINE_NOTICE = ("no answer was generated (no model configured: set ANTHROPIC_API_KEY); "
                  "below is the best evidence from the memory, with its provenance")


def tool_specs(svc: MemoryService) -> tuple[list[dict], dict]:
    """Anthropic tool definitions (schemas inferred by the MCP SDK, as `synix mcp` serves
    them) and name -> function."""
    from mcp.server.mcpserver.tools import Tool

    fns = memory_tools(svc)
    specs = []
    for fn in fns:
        tool = Tool.from_function(fn)
        specs.append({"name": tool.name, "description": tool.description,
                      "input_schema": tool.parameters})
    return specs, {fn.__name__: fn for fn in fns}


def _run_tool(fns: dict, name: str, args: dict) -> tuple[str, bool]:
    """(result text, is_error) of one tool call; a bad call is reported to the model."""
    fn = fns.get(name)
    if fn is None:
        return f"unknown tool {name!r}", True
    capability = served_by("mcp").get(name)
    if capability is not None and isinstance(args, dict):
        try:  # the same names, and older spellings, as `synix mcp` takes
            args = resolve(capability.name, args, door="mcp", only=inspect.signature(fn).parameters)
        except UnknownParameter as exc:
            return exc.one_line(), True
    try:
        inspect.signature(fn).bind(**(args or {}))
    except TypeError as exc:  # arguments that do not fit the tool's signature
        return f"bad arguments for {name}: {exc}", True
    try:
        text = json.dumps(fn(**(args or {})), default=str, ensure_ascii=False)
    except SynixError as exc:
        return exc.one_line(), True
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + " …[truncated]"
    return text, False


def make_anthropic_client(http_client=None):
    """The real SDK client; `http_client` lets tests route it through a mocked transport."""
    import anthropic

    config = settings()
    key = config.anthropic_api_key or config.llm_api_key
    if not key:
        raise LLMConfigError("no ANTHROPIC_API_KEY set", hint="set it, or use --offline")
    return anthropic.Anthropic(api_key=key, http_client=http_client, max_retries=2)


def ask(svc: MemoryService, question: str, *, client=None, model: str | None = None,
        max_steps: int = 8, offline: bool | None = None, evidence_limit: int = 5) -> dict:
    """Answer `question` from the memory. Returns {"answer", "generated", "citations",
    "steps", ...}; offline, {"answer": None, "generated": False, "notice", "evidence"}."""
    if not question or not question.strip():
        raise BadRequest("the question is empty", hint='ask something, e.g. synix ask "what races did I run?"')
    if offline is None:
        config = settings()
        offline = client is None and not (config.anthropic_api_key or config.llm_api_key)
    if offline:
        return offline_answer(svc, question, limit=evidence_limit)
    client = client or make_anthropic_client()
    return _agent(svc, client, question, model=model or settings().llm_model or DEFAULT_MODEL,
                  max_steps=max_steps)


def offline_answer(svc: MemoryService, question: str, *, limit: int = 5) -> dict:
    """The best evidence with provenance, and an explicit statement that nothing was generated."""
    memories = svc.search(question, limit=limit)
    passages = svc.search(question, limit=limit, evidence=True)
    evidence = [{"kind": "memory", **_evidence_item(h)} for h in memories["hits"]]
    evidence += [{"kind": "transcript", **_evidence_item(h)} for h in passages["hits"]]
    return {"question": question, "answer": None, "generated": False, "notice": OFFLINE_NOTICE,
            "evidence": evidence,
            "citations": [{"artifact_id": e["artifact_id"], "sources": e["sources"]} for e in evidence]}


def _evidence_item(hit: dict) -> dict:
    return {"artifact_id": hit["artifact_id"], "layer": hit["layer"], "title": hit.get("title"),
            "date": hit.get("date"), "snippet": hit["snippet"],
            "message_range": hit.get("message_range"),
            "sources": [{"conversation_id": s.get("conversation_id"), "title": s.get("title"),
                         "date": s.get("date"), "message_range": s.get("message_range")}
                        for s in hit.get("sources", [])]}


def _agent(svc: MemoryService, client, question: str, *, model: str, max_steps: int) -> dict:
    import anthropic

    specs, fns = tool_specs(svc)
    the_map = json.dumps(svc.memory_map(), default=str, ensure_ascii=False)[:MAX_RESULT_CHARS]
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    steps, seen = [], set()
    usage = {"input_tokens": 0, "output_tokens": 0}
    for _ in range(max_steps + 1):
        try:
            response = client.messages.create(model=model, max_tokens=1024, tools=specs,
                                              system=SYSTEM.format(map=the_map), messages=messages)
        except anthropic.APIError as exc:
            raise LLMError(f"the model call for `synix ask` failed: {exc}",
                           hint="check ANTHROPIC_API_KEY and the network, or use --offline") from exc
        usage["input_tokens"] += response.usage.input_tokens
        usage["output_tokens"] += response.usage.output_tokens
        calls = [b for b in response.content if b.type == "tool_use"]
        if response.stop_reason != "tool_use" or not calls or len(steps) >= max_steps:
            text = "".join(b.text for b in response.content if b.type == "text").strip()
            return {"question": question, "answer": text, "generated": True, "model": response.model,
                    "citations": _citations(svc, text, seen), "steps": steps, "usage": usage}
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        results = []
        for call in calls:
            out, is_error = _run_tool(fns, call.name, call.input)
            seen.update(_IDS.findall(out))
            steps.append({"tool": call.name, "input": call.input, "error": out if is_error else None})
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": out,
                            "is_error": is_error})
        messages.append({"role": "user", "content": results})
    raise LLMError(f"`synix ask` did not finish within {max_steps} tool steps",
                   hint="raise --max-steps or ask a narrower question")


def _citations(svc: MemoryService, text: str, seen: set[str]) -> list[dict]:
    """The record ids the answer cites that the tools actually returned, with the source
    conversations under each."""
    out = []
    for rid in dict.fromkeys(_IDS.findall(text)):
        if rid not in seen:
            continue
        try:
            leaves = svc.leaves(rid, limit=20)["leaves"]
            rec = svc.sources(rid)
        except SynixError:
            continue
        out.append({"artifact_id": rid, "layer": rec["layer"], "title": rec["title"],
                    "sources": [{"conversation_id": l["conversation_id"], "title": l["title"],
                                 "date": l["date"], "message_range": l["message_range"]} for l in leaves]})
    return out
