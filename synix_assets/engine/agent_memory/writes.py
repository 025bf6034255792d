"""The five write tools of an agent (Syke's names) as one use case every door calls: the Python
API, the CLI, HTTP and MCP.

Each write is checked once (ids, text, times, evidence that names stored records) before
anything touches the disk, then appended to the branch's memory-ops log in one durable
transaction (`MemoryLog.append`: when the call returns, the op survives a kill or a power cut),
then made into records right away (`apply_log`, the same function every build calls, under the
project's build lock). If a build holds the lock longer than `APPLY_WAIT_S`, the answer says
`applied: false` and that build — or the next — makes the records: nothing written is lost.
"""
from __future__ import annotations

import uuid

from synix_assets.engine.agent_memory.indexing import index_memories
from synix_assets.engine.agent_memory.records import sync
from synix_assets.project import ProjectPaths
from synix_resources.agent_memory.log import MemoryLog
from synix_resources.agent_memory.replay import MAX_CONTENT_CHARS, MAX_EVIDENCE, MAX_REASON_CHARS, text
from synix_resources.errors import MemoryOpRefused, StoreLockedError
from synix_resources.ledger.events import EVENT_ID
from synix_resources.ledger.store import EvidenceLedger
from synix_resources.names import MAIN, check_memory_id
from synix_resources.process.locking import project_lock
from synix_resources.text import escape_invalid, is_valid_text
from synix_resources.values import instant

APPLY_WAIT_S = 5.0


def apply_log(paths: ProjectPaths, *, lock_timeout_s: float = APPLY_WAIT_S,
              index: bool = False) -> dict | None:
    """Make the branch's agent records what its memory log says (None: no log, nothing to do).
    Every build calls it (inside its lock, which this re-enters). `index=True` (a write between
    builds): the search index gets the memories now held too, under the same lock."""
    if not paths.memory_log.is_file():
        return None
    with project_lock(paths.lock, timeout_s=lock_timeout_s):
        log = MemoryLog(paths.memory_log)
        try:
            state = log.state()
        finally:
            log.close()
        store = paths.open_store()
        try:
            report = sync(store, state)
            if index:
                report["indexed"] = index_memories(paths, store)
            return report
        finally:
            store.close()


class MemoryWriter:
    """Writes to one branch's agent memory (`paths.branch`)."""

    def __init__(self, paths: ProjectPaths, *, tags: dict | None = None, apply: bool = True,
                 store=None):
        """`tags`: fields every op records (an agent step names itself: `by`, `loop`), so the
        log says who wrote what and a rebuild can take back its own writes (`MemoryLog.drop_by`).
        `apply=False`: the records are made by the caller (a build step syncs once per turn,
        `sync_records`); the writer then keeps its log open until `close`, so each write and
        sync replays only the ops appended since the last. `store`: the open store evidence is
        checked against (the build's), instead of opening it for every write."""
        self.paths = paths
        self.tags = dict(tags or {})
        self.apply = apply
        self.store = store
        self._log: MemoryLog | None = None
        self._mark: tuple | None = None  # where in the log the last `sync_records` stood

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def sync_records(self, store) -> dict | None:
        """Make `store`'s agent records what the log says, rewriting only those the ops since
        the last call named (all of them the first time). None: nothing was ever written."""
        if not self.paths.memory_log.is_file():
            return None
        state, named, self._mark = self._kept_log().changes(self._mark)
        return sync(store, state, only=named)

    def _kept_log(self) -> MemoryLog:
        if self._log is None:
            self._log = MemoryLog(self.paths.memory_log)
        return self._log

    # ---- the five write tools --------------------------------------------------------

    def create_memory(self, content: str, evidence: list[str] | None = None,
                      valid_from: str | None = None) -> dict:
        op = {"op": "create", "memory_id": _new_id("mem"),
              "content": text(content, "content", MAX_CONTENT_CHARS),
              "evidence": self._evidence(evidence), **_since(valid_from)}
        return self._commit(op)

    def update_memory(self, memory_id: str, content: str, evidence: list[str] | None = None,
                      valid_from: str | None = None) -> dict:
        op = {"op": "update", "memory_id": check_memory_id(memory_id),
              "content": text(content, "content", MAX_CONTENT_CHARS),
              "evidence": self._evidence(evidence), **_since(valid_from)}
        return self._commit(op)

    def supersede_memory(self, memory_id: str, content: str, reason: str | None = None,
                         evidence: list[str] | None = None, valid_from: str | None = None) -> dict:
        # design 003's supersede_memory(memory_id, new_content) gives no reason: it is optional
        op = {"op": "supersede", "memory_id": check_memory_id(memory_id), "new_id": _new_id("mem"),
              "content": text(content, "content", MAX_CONTENT_CHARS),
              "reason": None if reason is None else text(reason, "reason", MAX_REASON_CHARS),
              "evidence": self._evidence(evidence), **_since(valid_from)}
        return self._commit(op)

    def deactivate_memory(self, memory_id: str, reason: str, valid_from: str | None = None) -> dict:
        op = {"op": "deactivate", "memory_id": check_memory_id(memory_id),
              "reason": text(reason, "reason", MAX_REASON_CHARS), **_since(valid_from)}
        return self._commit(op)

    def create_link(self, source_id: str, target_id: str, reason: str) -> dict:
        op = {"op": "link", "link_id": _new_id("link"),
              "source_id": check_memory_id(source_id, "source_id"),
              "target_id": check_memory_id(target_id, "target_id"),
              "reason": text(reason, "reason", MAX_REASON_CHARS)}
        return self._commit(op)

    # ---- plumbing ----------------------------------------------------------------------

    def _evidence(self, evidence) -> list[str]:
        """Design 003's `source_event_ids`, each resolved or the write refused with one line
        (a memory citing nothing checkable would look grounded): an event id (`ev-…`) names
        an event of the evidence ledger (L1: one message, live turn or appended event, with
        the conversation it belongs to), resolved by the ledger's `resolve`; any other id
        names a stored record — a transcript or any record built from them — by its full id
        or a unique prefix. The answer keeps the order cited, events by their ids."""
        if evidence is None:
            return []
        if isinstance(evidence, str) or not isinstance(evidence, (list, tuple)):
            raise MemoryOpRefused("source_event_ids must be a list of event or record ids",
                                  hint='e.g. source_event_ids=["ev-…"] from search_evidence')
        if len(evidence) > MAX_EVIDENCE:
            raise MemoryOpRefused(f"{len(evidence)} evidence ids, more than {MAX_EVIDENCE}")
        for ref in evidence:
            if not isinstance(ref, str) or not is_valid_text(ref):
                shown = escape_invalid(ref) if isinstance(ref, str) else repr(ref)
                raise MemoryOpRefused(f"evidence id {shown} is not valid text",
                                      hint="cite event ids from search_evidence or record ids "
                                           "from search_memories / get_memory")
        events = self._ledger_events([ref for ref in evidence if EVENT_ID.match(ref)])
        records = self._records([ref for ref in evidence if not EVENT_ID.match(ref)])
        out = []
        for ref in evidence:
            full = ref if EVENT_ID.match(ref) and ref in events else records.get(ref)
            if full not in out:
                out.append(full)
        return out

    def _ledger_events(self, ids: list[str]) -> set[str]:
        """The cited event ids the ledger holds; one it does not (never appended, or its
        conversation forgotten) refuses the write."""
        if not ids:
            return set()
        missing = ids
        if self.paths.ledger.is_file():
            ledger = EvidenceLedger(self.paths.ledger, read_only=True)
            try:
                missing = ledger.resolve(ids).missing
            finally:
                ledger.close()
        if missing:
            raise MemoryOpRefused(f"evidence {missing[0][:60]!r} names no event in the evidence ledger",
                                  hint="cite event ids from search_evidence or browse_timeline "
                                       "(`synix evidence sync_evidence` feeds the ledger)")
        return set(ids)

    def _records(self, refs: list[str]) -> dict[str, str]:
        """Each cited record id (or unique prefix) → its stored record's full id; one that
        names no record refuses the write."""
        if not refs:
            return {}
        if self.store is None and not self.paths.has_store():
            raise MemoryOpRefused(f"nothing has been built in {self.paths.root} yet, so no "
                                  "record can be cited", hint="run `synix run` first, or cite "
                                  "event ids from search_evidence")
        store = self.store or self.paths.open_store(read_only=True)
        try:
            out = {}
            for ref in refs:
                found = store.find(ref)
                if found is None:
                    raise MemoryOpRefused(f"evidence {ref[:60]!r} names no record in this memory",
                                          hint="cite event ids from search_evidence or record ids "
                                               "from search_memories / get_memory")
                out[ref] = found.artifact_id
            return out
        finally:
            if store is not self.store:
                store.close()

    def _commit(self, op: dict) -> dict:
        self._start_branch_log()
        log = self._kept_log() if not self.apply else MemoryLog(self.paths.memory_log)
        try:
            written = log.append({**op, **self.tags})
        finally:
            if self.apply:
                log.close()
        applied = False
        try:
            if self.apply:
                apply_log(self.paths, index=True)
                applied = True
        except StoreLockedError:  # a build holds the lock: it (or the next one) applies the op
            applied = False
        keys = ("op", "op_id", "recorded_at", "memory_id", "new_id", "link_id", "valid_from")
        return {**{k: written[k] for k in keys if written.get(k)}, "applied": applied,
                "branch": self.paths.branch}


    def _start_branch_log(self) -> None:
        """A branch's first write starts its log from main's: the branch was made pointing at
        main's memories, and its log must replay to them (or its next sync would retire them)."""
        main = self.paths.on_branch(MAIN)
        if self.paths.branch == MAIN or self.paths.memory_log.exists() or not main.memory_log.is_file():
            return
        self.paths.memory_log.parent.mkdir(parents=True, exist_ok=True)
        source = MemoryLog(main.memory_log)
        try:
            source.copy_to(self.paths.memory_log)
        finally:
            source.close()


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def _since(valid_from: str | None) -> dict:
    return {"valid_from": instant(valid_from, "valid_from")} if valid_from is not None else {}
