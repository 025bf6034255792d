"""`synix live status`: the outbox of each memory as counts (pending / building / built / dead)."""
from __future__ import annotations

from synix_assets.pipeline.steps import LIVE_INBOX
from synix_resources.live.inbox import STATES, Inbox

EMPTY = {**{s: 0 for s in STATES}, "open_sessions": 0, "closed_sessions": 0, "turns": 0,
         "next_attempt_at": None, "max_attempts_so_far": 0, "last_error": None, "dead_letters": []}


def project_status(paths, tenant: str | None = None) -> dict:
    path = paths.root / LIVE_INBOX
    if not path.is_file():
        return {"tenant": tenant or str(paths.root), **EMPTY}
    inbox = Inbox(path, read_only=True)
    try:
        return {"tenant": tenant or str(paths.root), **inbox.status()}
    finally:
        inbox.close()


def home_status(home) -> list[dict]:
    try:
        return [{**project_status(home.paths(name), name), "created_at": row["created_at"]}
                for row in home.list() for name in [row["name"]]]
    finally:
        home.close()
