"""What a memory-ops log means: its ops replayed, in order, into memories (each with its versions
and their validity) and links. Pure: the same ops always give the same state, which is what lets
a build reproduce the records an agent's writes made.

A memory's versions: `create` opens version 1; `update` (a minor edit, same memory) closes the
current version and opens the next; `supersede` closes the memory's last version and creates a
new memory that `supersedes` it (the old one is `superseded`, its `superseded_by` points at the
new one); `deactivate` closes the last version (state `deactivated`, still readable). A version
is valid from its `valid_from` (the op's, or when it was recorded) until the next one's
(`valid_until`; None while current), so `version_at(t)` answers what was held at time t.

Lifecycle of a memory still held (Syke's): `soft` when made from one piece of evidence,
`active` once reinforced (more evidence, an update or a link: 2–3 reinforcements), `solid`
from 4, and `dormant` when nothing reinforced it for DORMANT_DAYS (still held and readable;
the next reinforcement wakes it). Each reinforcement is kept with its instant (`reinforced`),
so `lifecycle_at` answers what the lifecycle was at any time. Retired memories are
`superseded` or `deactivated`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from synix_resources.errors import MemoryNotFound, MemoryOpRefused
from synix_resources.values import instant

MAX_CONTENT_CHARS = 20_000
MAX_REASON_CHARS = 2_000
MAX_EVIDENCE = 100
ACTIVE, SUPERSEDED, DEACTIVATED = "active", "superseded", "deactivated"
DORMANT_DAYS = 30


def lifecycle_at(reinforced: list, t: str | None = None, dormant_days: int = DORMANT_DAYS) -> str:
    """soft/active/solid from the reinforcements (instant, weight) made by time `t` (all when
    None), `dormant` when the last of them is more than `dormant_days` before `t`."""
    held = [(at, w) for at, w in reinforced if t is None or at <= t]
    strength = sum(w for _, w in held)
    if t is not None and held:
        last = datetime.fromisoformat(max(at for at, _ in held).replace("Z", "+00:00"))
        now = datetime.fromisoformat(t.replace("Z", "+00:00"))
        if (now - last).days >= dormant_days:
            return "dormant"
    return "soft" if strength < 2 else "active" if strength < 4 else "solid"


def text(value: object, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MemoryOpRefused(f"{what} is empty", hint=f"give the {what} as text")
    if len(value) > limit:
        raise MemoryOpRefused(f"{what} has {len(value)} characters, more than {limit}",
                              hint="split it into several memories")
    return value


@dataclass
class Version:
    n: int
    content: str
    valid_from: str
    valid_until: str | None = None
    op: str = "create"
    reason: str | None = None

    def holds_at(self, t: str) -> bool:
        return self.valid_from <= t and (self.valid_until is None or t < self.valid_until)


@dataclass
class Memory:
    memory_id: str
    created_at: str
    evidence: list[str]
    versions: list[Version] = field(default_factory=list)
    state: str = ACTIVE
    superseded_by: str | None = None
    supersedes: str | None = None
    retired_reason: str | None = None
    links: int = 0
    reinforced: list = field(default_factory=list)  # [instant, weight] of each reinforcement

    @property
    def current(self) -> Version:
        return self.versions[-1]

    @property
    def lifecycle(self) -> str:
        return self.state if self.state != ACTIVE else lifecycle_at(self.reinforced)

    def version_at(self, t: str) -> Version | None:
        return next((v for v in self.versions if v.holds_at(t)), None)


@dataclass
class Link:
    link_id: str
    source_id: str
    target_id: str
    reason: str
    created_at: str


@dataclass
class MemoryState:
    memories: dict[str, Memory] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)

    def memory(self, memory_id: str) -> Memory:
        found = self.memories.get(memory_id)
        if found is None:
            raise MemoryNotFound(f"no memory {memory_id} in this memory log",
                                 hint="use an id create_memory or supersede_memory answered")
        return found

    def held(self, memory_id: str, doing: str) -> Memory:
        """The memory, refused if it was already retired (only a held memory changes)."""
        found = self.memory(memory_id)
        if found.state != ACTIVE:
            by = f" by {found.superseded_by}" if found.superseded_by else ""
            raise MemoryOpRefused(f"cannot {doing} memory {memory_id}: it was {found.state}{by}",
                                  hint="change the memory that is current (get_memory_history shows it)")
        return found

    def _since(self, mem: Memory, t: str) -> None:
        if t < mem.current.valid_from:
            raise MemoryOpRefused(f"valid_from {t} is before {mem.memory_id}'s current version "
                                  f"(valid from {mem.current.valid_from})",
                                  hint="a new version starts at or after the one it replaces")

    def apply(self, op: dict) -> None:
        """Apply one op (raising MemoryOpRefused/MemoryNotFound if it does not fit the state)."""
        # every instant in one form (`instant`), so they compare as strings
        kind, t = op["op"], op.get("valid_from") or instant(op["recorded_at"], "recorded_at")
        if kind == "create":
            if op["memory_id"] in self.memories:
                raise MemoryOpRefused(f"memory {op['memory_id']} exists already")
            self.memories[op["memory_id"]] = Memory(op["memory_id"], t, list(op["evidence"]),
                                                    [Version(1, op["content"], t)],
                                                    reinforced=[[t, len(op["evidence"])]])
        elif kind == "update":
            mem = self.held(op["memory_id"], "update")
            self._since(mem, t)
            mem.current.valid_until = t
            mem.versions.append(Version(len(mem.versions) + 1, op["content"], t, op="update",
                                        reason=op.get("reason")))
            fresh = [e for e in op.get("evidence", []) if e not in mem.evidence]
            mem.evidence += fresh
            mem.reinforced.append([t, 1 + len(fresh)])
        elif kind == "supersede":
            old = self.held(op["memory_id"], "supersede")
            self._since(old, t)
            if op["new_id"] in self.memories:
                raise MemoryOpRefused(f"memory {op['new_id']} exists already")
            old.current.valid_until, old.state, old.superseded_by = t, SUPERSEDED, op["new_id"]
            old.retired_reason = op["reason"]
            new = Memory(op["new_id"], t, list(op["evidence"]),
                         [Version(1, op["content"], t, op="supersede", reason=op["reason"])],
                         supersedes=old.memory_id, reinforced=[[t, len(op["evidence"])]])
            self.memories[new.memory_id] = new
        elif kind == "deactivate":
            mem = self.held(op["memory_id"], "deactivate")
            self._since(mem, t)
            mem.current.valid_until, mem.state, mem.retired_reason = t, DEACTIVATED, op["reason"]
        elif kind == "link":
            ends = [self.memory(op["source_id"]), self.memory(op["target_id"])]
            if ends[0] is ends[1]:
                raise MemoryOpRefused(f"a link needs two memories, both ends are {op['source_id']}")
            for mem in ends:
                mem.links += 1
                mem.reinforced.append([t, 1])
            self.links[op["link_id"]] = Link(op["link_id"], op["source_id"], op["target_id"],
                                              op["reason"], t)
        else:
            raise MemoryOpRefused(f"unknown memory op {kind!r} in the log")


def replay(ops: list[dict]) -> MemoryState:
    state = MemoryState()
    for op in ops:
        state.apply(op)
    return state
