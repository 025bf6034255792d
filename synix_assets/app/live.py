"""What `synix serve --home` does for a tenant, as plain calls (the HTTP layer is thin over it):
ingest, close, read a session, and the brief (built memory + turns not yet built).

Open inboxes and memory readers are cached per tenant, least recently used first out, so a home
with hundreds of tenants keeps a bounded number of files open; a deleted tenant's are closed.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

from synix_assets.app.tenants import TenantHome
from synix_assets.app.synapse import brief_tier1, fit_tier1
from synix_assets.engine.agent_memory.reads import as_of_instant
from synix_resources.errors import ArtifactNotFound, InvalidName, SessionNotFound
from synix_resources.live.requests import parse_ingest
from synix_resources.llm.mapreduce import estimate_tokens
from synix_resources.names import check_session_id, check_tenant

OPEN_INBOXES = 256
OPEN_MEMORIES = 32
PRUNE_EVERY_S = 5.0
RECENT_SESSIONS = 5
RECENT_TURNS = 8
TURN_PREVIEW_CHARS = 600


class _LRU:
    """A bounded cache of open things (closed when evicted)."""

    def __init__(self, size: int, open_fn, close_fn):
        self.size, self.open_fn, self.close_fn = size, open_fn, close_fn
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
            value = self.items[key] = self.open_fn(key)
            while len(self.items) > self.size:
                self.close_fn(self.items.popitem(last=False)[1])
            return value

    def keep(self, keys: set) -> None:
        with self.lock:
            for key in [k for k in self.items if k not in keys]:
                self.close_fn(self.items.pop(key))

    def close(self) -> None:
        self.keep(set())


class TenantServices:
    def __init__(self, home: TenantHome):
        self.home = home
        self.inboxes = _LRU(OPEN_INBOXES, home.inbox, lambda box: box.close())
        self.memories = _LRU(OPEN_MEMORIES, self._open_memory, lambda svc: svc.close())
        self._pruned = time.monotonic()

    def _open_memory(self, name: str):
        from synix_assets.app.memory import MemoryService

        paths = self.home.paths(name)
        if not paths.search.exists():  # opened (and cached) only once a first build finished
            raise ArtifactNotFound(f"nothing has been built for tenant {name!r} yet",
                                   hint="post turns and close a session; the build follows")
        return MemoryService(paths)

    def authorise(self, tenant: str, token: str | None) -> tuple[int, str] | None:
        """None if `token` opens `tenant`, else (status, one-line reason). The answer never says
        whether another tenant exists."""
        self._prune()
        owner = self.home.registry.tenant_of(token)
        if owner is None:
            return 401, ("refused: a valid tenant token is required (Authorization: Bearer TOKEN, "
                         "printed by `synix tenant create`)")
        try:
            check_tenant(tenant)
        except InvalidName as exc:  # says nothing about which tenants exist
            return 400, exc.one_line()
        if owner != tenant:
            return 403, f"refused: this token is not valid for tenant {tenant!r}"
        return None

    def _prune(self) -> None:
        """Close what is open for tenants that were deleted meanwhile (their files must go)."""
        if time.monotonic() - self._pruned < PRUNE_EVERY_S:
            return
        self._pruned = time.monotonic()
        names = set(self.home.names())
        self.inboxes.keep(names)
        self.memories.keep(names)

    def memory(self, tenant: str):
        """The tenant's built memory (raises ArtifactNotFound before its first build)."""
        return self.memories.get(tenant)

    # ---- live writes -------------------------------------------------------------------

    def ingest(self, tenant: str, body: bytes, idempotency_key: str | None = None) -> dict:
        request = parse_ingest(body, idempotency_key=idempotency_key)
        return self.inboxes.get(tenant).ingest(request)

    def close_session(self, tenant: str, session_id: str) -> dict:
        return self.inboxes.get(tenant).close_session(session_id)

    def session(self, tenant: str, session_id: str, *, last: int | None = None) -> dict:
        check_session_id(session_id)
        inbox = self.inboxes.get(tenant)
        info = inbox.session(session_id)
        if info is None:
            raise SessionNotFound(f"no session {session_id!r} in this memory",
                                  hint="post turns with this session_id first")
        return {**info, "turns": inbox.turns(session_id, last=last)}

    # ---- the brief ---------------------------------------------------------------------

    def brief(self, tenant: str, query: str | None = None, *, budget_tokens: int = 2000, hits: int = 5,
              sessions: int = RECENT_SESSIONS, turns: int = RECENT_TURNS, as_of: str | None = None,
              session: str | None = None) -> dict:
        """Within `budget_tokens`: the recent turns of the sessions not built yet (open, or closed
        and waiting in the outbox; newest first, at most half the budget), so an agent sees what
        was said a minute ago even while the model is down, then the built memory's brief (core,
        recent rollups/episodes, hits with provenance) in the rest. `as_of` (ISO date/time):
        what the memory held then (no unbuilt sessions: those are now's). `session`: Tier 1's
        session (a memory with a working window), default the latest."""
        at = as_of_instant(as_of)
        if session is not None:
            check_session_id(session)
        inbox = self.inboxes.get(tenant)
        live, blocks, live_tokens = [], [], 0
        for info in ([] if at else inbox.unbuilt_sessions(limit=sessions)):
            kept = []
            for t in reversed(inbox.turns(info["session_id"], last=turns)):  # newest first
                line = f"[{t['turn_id']}] {t['role']}: {t['content'][:TURN_PREVIEW_CHARS]}"
                cost = estimate_tokens(line) + 2
                if live_tokens + cost > budget_tokens // 2:
                    break
                live_tokens += cost
                kept.insert(0, {"turn_id": t["turn_id"], "role": t["role"], "ts": t["ts"],
                                "content": t["content"][:TURN_PREVIEW_CHARS], "line": line})
            if not kept:
                break
            live.append({"session_id": info["session_id"], "state": info["state"], "version": info["version"],
                         "turns": [{k: v for k, v in t.items() if k != "line"} for t in kept]})
            blocks.append(f"## Session {info['session_id']} ({info['state']}, not yet in memory)\n"
                          + "\n".join(t["line"] for t in kept))
        notice = None
        room = max(100, budget_tokens - live_tokens)
        try:  # Tier 1 (the inbox's and the built layers') comes within the memory's brief
            memory = self.memory(tenant).brief(query, budget_tokens=room, hits=hits, as_of=at, session=session)
            tier1 = memory.pop("tier1", None)
        except ArtifactNotFound as exc:  # nothing built yet: the live turns are the whole brief
            notice = exc.one_line()
            tier1 = brief_tier1(self.home.paths(tenant), session, as_of=at)
            used = fit_tier1(tier1, room) if tier1 else 0
            memory = {"sections": [], "text": tier1["text"] if tier1 else "", "tokens": used}
        text = "\n\n".join(part for part in (memory.get("text", ""), *blocks) if part)
        return {"tenant": tenant, "query": query, "budget_tokens": budget_tokens,
                "sections": memory.get("sections", []), "live_sessions": live, "text": text,
                "tokens": memory.get("tokens", 0) + live_tokens,
                **({"notice": notice} if notice else {}), **({"tier1": tier1} if tier1 else {}),
                **({"tier2": memory["tier2"]} if memory.get("tier2") else {}),
                **({"search_notice": memory["notice"]} if memory.get("notice") else {})}

    def close(self) -> None:
        self.inboxes.close()
        self.memories.close()
