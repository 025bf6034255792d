"""An `api` source (design §3.1): conversations pulled from a service into a local mirror folder
that the build reads like an export folder.

    pipeline.source("webui", kind="api", url="http://localhost:3000", format="openwebui")

The service is reached through a small protocol, `ConversationService`:

- `changed(since, page)`: one page of the conversations changed at or after the cursor `since`
  (None: all), each as (id, updated stamp), and the token of the next page (None: the last);
- `fetch(id)`: one conversation as the bytes of an export file of the source's format.

`pull` keeps its state in `<mirror>/.synix-pull.json` (hidden, so the build never reads it):

- `fetched`: id → the updated stamp of the copy in the mirror. A conversation listed with the
  stamp it was fetched at is not fetched again, however often it is listed.
- `pending`: the changes a listing found that are not fetched yet, saved before the first fetch
  and after each one, so an interrupted pull (a kill, a service that went away) resumes with
  what is left and never fetches what it already has.
- `cursor`: the newest stamp listed, moved on only once nothing is pending (a conversation that
  changes during a pull is listed again by the next one).

Each conversation is written to `<mirror>/<id>.json` atomically (a file either old or whole),
so the exports sensor, which watches the mirror like any export folder, builds it on its next
tick: the pull sensor (dagster_defs/api_sensor.py) only pulls, and one road leads to a build.
A conversation deleted on the service stays in the mirror (a change listing does not say it
went); `synix forget` removes it from the memory.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from synix_resources.errors import ApiSourceError
from synix_resources.fingerprints import sha256_text

STATE_FILE = ".synix-pull.json"
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
MAX_PAGES = 100_000  # a service whose pages never end is an error, not an endless pull


@dataclass(frozen=True)
class Change:
    conversation_id: str
    updated: str  # the service's stamp, compared for equality and order as text of equal form


@dataclass
class ChangePage:
    changes: list[Change]
    next_page: str | None = None


class ConversationService(Protocol):
    def changed(self, since: str | None, page: str | None) -> ChangePage: ...

    def fetch(self, conversation_id: str) -> bytes: ...


@dataclass
class PullResult:
    source: str
    listed: int = 0  # changes the listing returned (this pull's or the interrupted one's)
    fetched: list[str] = field(default_factory=list)  # ids written to the mirror
    unchanged: int = 0  # listed with the stamp already fetched: not fetched again
    resumed: bool = False  # the pull went on with an interrupted pull's pending list

    def to_json(self) -> dict:
        return {"source": self.source, "listed": self.listed, "fetched": len(self.fetched),
                "fetched_ids": self.fetched[:50], "unchanged": self.unchanged, "resumed": self.resumed}


def mirror_file(mirror: Path, conversation_id: str) -> Path:
    """Where a conversation's copy is kept: its id when that is a plain file name, else a hash
    (an id is the service's text: never a path of its own choosing)."""
    name = conversation_id if SAFE_ID.fullmatch(conversation_id) and conversation_id not in (".", "..") \
        else "id-" + sha256_text(conversation_id)[:32]
    return mirror / f"{name}.json"


def _load(path: Path, source: str) -> dict:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"cursor": None, "pending": {}, "fetched": {}}
    except (OSError, ValueError) as exc:
        raise ApiSourceError(f"api source '{source}': its pull state {path} cannot be read ({exc})",
                             hint=f"delete {path} to pull every conversation again") from None
    if not isinstance(state, dict) or not isinstance(state.get("fetched"), dict) \
            or not isinstance(state.get("pending"), dict):
        raise ApiSourceError(f"api source '{source}': its pull state {path} is not a pull state",
                             hint=f"delete {path} to pull every conversation again")
    return state


def _write(path: Path, data: bytes) -> None:
    """Atomically: a reader sees the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _save(path: Path, state: dict) -> None:
    _write(path, json.dumps(state, sort_keys=True).encode("utf-8"))


def pull(source: str, service: ConversationService, mirror: Path) -> PullResult:
    """Bring the mirror up to date with the service (see the module's description)."""
    mirror.mkdir(parents=True, exist_ok=True)
    state_path = mirror / STATE_FILE
    state = _load(state_path, source)
    result = PullResult(source, resumed=bool(state["pending"]))
    if not state["pending"]:
        newest, page = state.get("cursor"), None
        for _ in range(MAX_PAGES):
            listing = service.changed(state.get("cursor"), page)
            for change in listing.changes:
                result.listed += 1
                newest = max(newest or change.updated, change.updated)
                if state["fetched"].get(change.conversation_id) == change.updated:
                    result.unchanged += 1
                else:
                    state["pending"][change.conversation_id] = change.updated
            if listing.next_page is None:
                break
            page = listing.next_page
        else:
            raise ApiSourceError(f"api source '{source}': the service listed more than {MAX_PAGES} pages",
                                 hint="check that its next-page token changes from page to page")
        state["next_cursor"] = newest
        _save(state_path, state)  # before the first fetch: an interrupted pull resumes from here
    else:
        result.listed = len(state["pending"])
    for conversation_id, updated in sorted(state["pending"].items()):
        _write(mirror_file(mirror, conversation_id), service.fetch(conversation_id))
        result.fetched.append(conversation_id)
        state["fetched"][conversation_id] = updated
        del state["pending"][conversation_id]
        _save(state_path, state)
    state["cursor"] = state.pop("next_cursor", state.get("cursor"))
    _save(state_path, state)
    return result
