"""One vocabulary for every door: each capability of the memory, the names of its parameters
and the older spellings still accepted, declared once.

The CLI, the Python API, the HTTP API (`serve/api.py`, `memory_api.py`, `live_api.py`), the MCP
tools (`serve/tools.py`) and the explorer's requests take their parameter names from here, and
every door calls `resolve` (or is walked by `tests/serve/test_vocabulary.py` against `DOORS`), so
the same thing has the same name everywhere and a name a capability does not know is refused —
never dropped in silence.

Where a design names a thing, that is the name: Syke's 15 tools (design 003: `memory_id`,
`new_content`, `source_event_ids`, `before`, `topic`), the Python API of design 000 §4
(`query`, `step`), Synapse's routes (004: `/brief?query=`). The spellings the doors used before
stay as aliases (`q`, `layers`, `record_id`, `content`, `evidence`), listed per capability since
one word can be a name in one capability and an alias in another (`content` is create_memory's
text and update_memory's older spelling of `new_content`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from synix_resources.errors import UnknownParameter

# Every parameter name a capability may declare, with what it means (written once).
PARAMS: dict[str, str] = {
    "query": "the words to look for",
    "topic": "what to gather everything about (cross_reference)",
    "step": "the layer(s) to search or browse: a step name, or several",
    "mode": "fts, semantic or hybrid",
    "exact": "match the words literally",
    "leaves": "rank the source messages themselves",
    "evidence": "search the raw transcripts (passages) instead of the built records",
    "since": "dated on or after: YYYY[-MM[-DD]] or an ISO date-time",
    "until": "dated on or before (inclusive): YYYY[-MM[-DD]] or an ISO date-time",
    "before": "dated strictly before: YYYY[-MM[-DD]] or an ISO date-time",
    "period": "a record's period: YYYY-MM, YYYY-Www or YYYY-Qn",
    "conversation": "records built from this conversation id",
    "source": "the source the events or records came from (chatgpt, claude, live, github, …)",
    "source_file": "the export file the records came from",
    "limit": "most results",
    "page": "page number, from 1",
    "per_page": "records per page",
    "oldest_first": "list oldest first",
    "layer": "one layer (step) of the pipeline",
    "as_of": "ISO date/time: what the memory held then",
    "memory_id": "an agent memory's id (mem-…); get_memory takes any record id too",
    "record_id": "a record's id (or a unique prefix)",
    "content": "the text of a new memory",
    "new_content": "the new text of a memory",
    "source_event_ids": "the evidence a memory is drawn from: ledger event ids (ev-…, from "
                        "search_evidence) or record ids (transcripts or any built record), "
                        "each resolved or the write is refused",
    "events": "the events to append to the evidence ledger (each: source, event_type, content; "
              "docs/evidence.md)",
    "ids": "evidence ledger event ids (ev-…)",
    "valid_from": "when it became true (ISO date/time; default now)",
    "reason": "why, in plain words",
    "source_id": "the memory a link starts from",
    "target_id": "the memory a link leads to",
    "budget_tokens": "the most tokens the brief may take",
    "hits": "how many search hits the brief includes",
    "session": "Tier 1's session (synapse); default the latest",
    "recent": "recent records shown per layer",
    "depth": "levels of sources to follow",
    "per_node": "most sources shown per record",
    "question": "the question to answer",
    "offline": "do not call a model; show the best evidence",
    "model": "the model the agent uses",
    "max_steps": "most tool calls the agent may make",
    "tenant": "a tenant of the home server",
    "session_id": "a live session's id",
    "last": "the last N turns",
    "body": "the turns to ingest (JSON body, docs/live.md)",
    # the explorer's own navigation (a person's door: which record is open where)
    "sel": "the record selected in the results column (its sources shown beside it)",
    "src": "the record opened in the third column",
    "trail": "the drill-down path back: record ids, comma-separated",
    "range": "the messages to highlight in the open transcript: N or N-M",
    "base": "the branch a diff compares against (default main)",
    # door plumbing: where, not what
    "branch": "the branch to read or write (default main)",
    "project": "the project folder (CLI -p)",
    "as_json": "print the answer as JSON (CLI --json)",
    "token": "the server's token, given once in the URL (the guard's, docs/serve.md)",
}

# Parameters a door adds to every capability it serves (not the capability's own).
DOOR_PARAMS: dict[str, tuple[str, ...]] = {
    "cli": ("project", "branch", "as_json"),
    "http": ("branch", "token"),
    "python": (),
    "mcp": (),
    "explorer": ("branch", "token"),
}


@dataclass(frozen=True)
class Capability:
    """One thing the memory can do, by its (design) name: its parameters, the older spellings
    still accepted (alias → name) and where each door serves it (a door's own name for it)."""

    name: str
    params: tuple[str, ...]
    aliases: dict[str, str] = field(default_factory=dict)
    doors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    writes: bool = False

    def accepted(self) -> tuple[str, ...]:
        return self.params + tuple(self.aliases)


def _cap(name, params, aliases=None, writes=False, **doors) -> Capability:
    return Capability(name, tuple(params.split()), dict(aliases or {}),
                      {door: tuple(where.split(",")) for door, where in doors.items()}, writes)


_SEARCH = "query step mode exact leaves evidence since until period conversation limit as_of"
_EVENTS = {"evidence": "source_event_ids"}

CAPABILITIES: dict[str, Capability] = {c.name: c for c in (
    # ---- Syke's read tools (design 003) ------------------------------------------------
    _cap("search_memories", _SEARCH, {"q": "query", "layers": "step"},
         mcp="search_memories", http="GET /v1/search", cli="search", python="search"),
    # search_evidence and browse_timeline read the evidence ledger (003's L1: "search raw
    # events", "time-windowed events") in every door; reading the built transcripts and
    # records is search_transcripts / browse_records, Synix's own (below).
    _cap("search_evidence", "query source since before limit", {"q": "query"},
         mcp="search_evidence", http="GET /v1/events/search", cli="evidence search_evidence",
         python="search_evidence"),
    _cap("follow_links", "memory_id", mcp="follow_links", http="GET /v1/memories/{memory_id}/links",
         cli="memory follow_links", python="follow_links"),
    _cap("get_memory", "memory_id as_of", {"record_id": "memory_id", "artifact_id": "memory_id"},
         mcp="get_memory", http="GET /v1/memories/{memory_id},GET /v1/records/{record_id}",
         explorer="GET /records/{record_id}",
         cli="memory get_memory,get", python="get_memory,get"),
    _cap("list_active_memories", "limit", mcp="list_active_memories", http="GET /v1/memories",
         cli="memory list_active_memories", python="list_active_memories"),
    _cap("get_memory_history", "memory_id", mcp="get_memory_history",
         http="GET /v1/memories/{memory_id}/history", cli="memory get_memory_history",
         python="get_memory_history"),
    _cap("get_memex", "recent", mcp="get_memex,get_map", http="GET /v1/map", cli="memory get_memex",
         python="get_memex"),
    _cap("get_recent_memories", "limit", mcp="get_recent_memories"),
    _cap("browse_timeline", "since before source limit", mcp="browse_timeline",
         http="GET /v1/events/timeline", cli="evidence browse_timeline", python="browse_timeline"),
    _cap("cross_reference", "topic as_of limit", {"query": "topic", "q": "topic"},
         mcp="cross_reference", http="GET /v1/cross_reference", cli="memory cross_reference",
         python="cross_reference"),
    # ---- Syke's write tools (design 003) -----------------------------------------------
    _cap("create_memory", "content source_event_ids valid_from", _EVENTS, writes=True,
         mcp="create_memory", http="POST /v1/memories", cli="memory create_memory",
         python="create_memory"),
    _cap("update_memory", "memory_id new_content source_event_ids valid_from",
         {"content": "new_content", **_EVENTS}, writes=True, mcp="update_memory",
         http="POST /v1/memories/{memory_id}/update", cli="memory update_memory",
         python="update_memory"),
    _cap("supersede_memory", "memory_id new_content reason source_event_ids valid_from",
         {"content": "new_content", **_EVENTS}, writes=True, mcp="supersede_memory",
         http="POST /v1/memories/{memory_id}/supersede", cli="memory supersede_memory",
         python="supersede_memory"),
    _cap("deactivate_memory", "memory_id reason valid_from", writes=True, mcp="deactivate_memory",
         http="POST /v1/memories/{memory_id}/deactivate", cli="memory deactivate_memory",
         python="deactivate_memory"),
    _cap("create_link", "source_id target_id reason", writes=True, mcp="create_link",
         http="POST /v1/links", cli="memory create_link", python="create_link"),
    # ---- the evidence ledger's own (design 003's L1; docs/evidence.md) ---------------------
    _cap("append_events", "events", writes=True, mcp="append_events", http="POST /v1/events",
         cli="evidence append_events", python="append_events"),
    _cap("resolve_events", "ids", http="POST /v1/events/resolve", cli="evidence resolve_events",
         python="resolve_events"),
    _cap("sync_evidence", "", writes=True, cli="evidence sync_evidence", python="sync_evidence"),
    # ---- Synix's own navigation ----------------------------------------------------------
    # the built transcripts (passages with their message range) and the records by date: what
    # MCP's search_evidence / browse_timeline read before they were the ledger's
    _cap("search_transcripts", "query since until period conversation limit", {"q": "query"},
         mcp="search_transcripts"),
    _cap("browse_records", "since before until source step limit page", {"layers": "step"},
         mcp="browse_records", http="GET /v1/timeline"),
    _cap("follow", "record_id", mcp="follow", http="GET /v1/records/{record_id}/sources"),
    _cap("leaves", "record_id limit", http="GET /v1/records/{record_id}/leaves"),
    _cap("lineage", "record_id query depth per_node", {"q": "query", "artifact_id": "record_id"},
         mcp="lineage", http="GET /v1/records/{record_id}/lineage", cli="lineage", python="lineage"),
    _cap("list_layer", "layer page per_page oldest_first since until period conversation source "
                       "source_file", mcp="list_layer", http="GET /v1/layers/{layer}",
         explorer="GET /layers/{layer}"),
    _cap("layers", "", http="GET /v1/layers"),
    _cap("context", "", http="GET /v1/context", explorer="GET /context"),
    _cap("pipeline", "", http="GET /v1/pipeline", explorer="GET /pipeline,GET /pipeline/graph"),
    _cap("get_brief", "query budget_tokens hits as_of session", {"q": "query"},
         mcp="get_brief", http="GET /v1/brief", cli="memory get_brief", python="get_brief"),
    _cap("ask", "question offline model max_steps", cli="ask", python="ask"),
    # ---- the explorer's own pages (`synix serve`, a person's door) ------------------------
    # /explore is search_memories and list_layer on one page, with the columns' selection;
    # `q`/`layers` stay so the bookmarks made before the design names still open.
    _cap("explore", "query step mode as_of layer page sel src trail range",
         {"q": "query", "layers": "step"}, explorer="GET /explore"),
    _cap("switch_branch", "branch", {"name": "branch"}, explorer="GET /branch"),
    _cap("branch_diff", "branch base", explorer="GET /branches/diff"),
    # ---- the home server's live API (docs/live.md) ---------------------------------------
    _cap("ingest", "tenant body", writes=True, http="POST /v1/tenants/{tenant}/ingest"),
    _cap("close_session", "tenant session_id", writes=True,
         http="POST /v1/tenants/{tenant}/sessions/{session_id}/close"),
    _cap("live_session", "tenant session_id last", http="GET /v1/tenants/{tenant}/sessions/{session_id}"),
    _cap("live_status", "tenant", http="GET /v1/tenants/{tenant}/status"),
    _cap("live_brief", "tenant query budget_tokens hits as_of session", {"q": "query"},
         http="GET /v1/tenants/{tenant}/brief"),
)}

# Syke's 15 tools as design 003 lists them: (tool, its arguments), required ones first.
SYKE_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("create_memory", ("content", "source_event_ids")),
    ("create_link", ("source_id", "target_id", "reason")),
    ("update_memory", ("memory_id", "new_content")),
    ("supersede_memory", ("memory_id", "new_content")),
    ("deactivate_memory", ("memory_id", "reason")),
    ("search_memories", ("query",)),
    ("search_evidence", ("query",)),
    ("follow_links", ("memory_id",)),
    ("get_memory", ("memory_id",)),
    ("list_active_memories", ("limit",)),
    ("get_memory_history", ("memory_id",)),
    ("get_memex", ()),
    ("get_recent_memories", ("limit",)),
    ("browse_timeline", ("since", "before", "source")),
    ("cross_reference", ("topic",)),
)
WRITE_TOOLS = frozenset(c.name for c in CAPABILITIES.values() if c.writes and "mcp" in c.doors)


def served_by(door: str) -> dict[str, Capability]:
    """A door's own name for each capability it serves → the capability."""
    return {where: cap for cap in CAPABILITIES.values() for where in cap.doors.get(door, ())}


def resolve(capability: str, given: Mapping[str, Any], *, door: str = "mcp",
            extra: tuple[str, ...] = (), only: Iterable[str] | None = None,
            label: str | None = None) -> dict[str, Any]:
    """`given` with every alias replaced by its name. An unknown name, or a name given twice
    (under its alias too), is `UnknownParameter` naming what is accepted. `extra`: names the
    door adds (path parameters); `only`: the names this door's entry really takes (a door may
    serve a part of a capability: MCP's search_memories has no `exact`), so a declared name it
    would drop is refused too; `label`: what the refusal calls it (default the capability —
    the explorer names its page, which a person sees in the address bar)."""
    cap = CAPABILITIES[capability]
    label = label or capability
    own = cap.params if only is None else tuple(p for p in cap.params if p in set(only))
    accepted = own + extra + DOOR_PARAMS.get(door, ())
    aliases = {a: n for a, n in cap.aliases.items() if n in accepted}
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}  # name → the spelling it came under, to name both in a refusal
    for key, value in given.items():
        name = aliases.get(key, key) if key not in accepted else key
        if name not in accepted:
            raise UnknownParameter(f"{label} takes no parameter {str(key)[:60]!r}",
                                   hint=f"it accepts {describe(accepted, aliases)}")
        if name in out:
            raise UnknownParameter(f"{label} was given {name!r} twice "
                                   f"(as {spelled[name]!r} and {key!r})", hint=f"pass {name} once")
        out[name], spelled[name] = value, key
    return out


def describe(names: tuple[str, ...], aliases: Mapping[str, str]) -> str:
    """`a, b, c (older spellings: x → a)`: what is accepted, in one line."""
    text = ", ".join(dict.fromkeys(names)) or "no parameters"
    if aliases:
        text += " (older spellings: " + ", ".join(f"{a} → {n}" for a, n in aliases.items()) + ")"
    return text


def one_of(capability: str, name: str, value: Any, alias: str, alias_value: Any, *,
           required: bool = False) -> Any:
    """A Python keyword given under its name or its older spelling (not both; `required`:
    one of them) — the Python door's `resolve` for a signature that lists both."""
    if value is not None and alias_value is not None:
        raise UnknownParameter(f"{capability}() got {name} and its older spelling {alias}",
                               hint=f"pass {name} only")
    chosen = value if value is not None else alias_value
    if chosen is None and required:
        raise UnknownParameter(f"{capability}() missing required argument: {name!r}")
    return chosen
