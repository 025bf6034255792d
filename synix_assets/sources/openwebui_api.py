"""The `ConversationService` of an Open WebUI server (sources/api.py), over its HTTP JSON API:

- `GET {url}/api/v1/chats/list?page=N` (N from 1): the user's chats, newest change first, as
  `[{"id", "title", "updated_at", "created_at"}, …]` (epoch seconds); an empty page ends the list;
- `GET {url}/api/v1/chats/{id}`: one chat row, `{"id", "user_id", "title", "chat": {…},
  "updated_at", "created_at", …}` — the row Open WebUI's "Export chats" writes (export-formats
  §8.1), kept as a one-row export file the `openwebui` parser reads.

Every request sends `Authorization: Bearer $SYNIX_API_TOKEN` when it is set (an Open WebUI API
key: Settings → Account → API keys). Any failure — unreachable, an HTTP error, a page that is not
the JSON described — is one `ApiSourceError` line naming the source, the URL and the fix.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from synix_assets.sources.api import Change, ChangePage
from synix_resources.errors import ApiSourceError
from synix_resources.settings import settings

TIMEOUT_S = 30.0
STAMP_DIGITS = 20  # epoch seconds as fixed-width text: stamps then order as text


def stamp(value) -> str | None:
    """Open WebUI's `updated_at` (epoch seconds, an int) as a stamp; None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10 ** STAMP_DIGITS:
        return None
    return f"{value:0{STAMP_DIGITS}d}"


class OpenWebUIService:
    def __init__(self, source: str, url: str, token: str | None = None):
        self.source, self.url = source, url.rstrip("/")
        self.token = token if token is not None else settings().api_token

    def _get(self, path: str) -> bytes:
        url = self.url + path
        request = urllib.request.Request(url, headers={"Accept": "application/json", **(
            {"Authorization": f"Bearer {self.token}"} if self.token else {})})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return answer.read()
        except urllib.error.HTTPError as exc:
            hint = "set SYNIX_API_TOKEN to an API key of the service" if exc.code in (401, 403) \
                else "check the source's url= and that the service is an Open WebUI server"
            raise ApiSourceError(f"api source '{self.source}': GET {url} answered HTTP {exc.code} {exc.reason}",
                                 hint=hint) from None
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", exc)
            raise ApiSourceError(f"api source '{self.source}': cannot reach {url} ({why})",
                                 hint="start the service or fix the source's url=; the next pull resumes") from None

    def _json(self, path: str, what: str):
        body = self._get(path)
        try:
            return json.loads(body)
        except ValueError:
            raise ApiSourceError(f"api source '{self.source}': GET {self.url}{path} did not answer JSON",
                                 hint=f"expected {what}; check the source's url=") from None

    def changed(self, since: str | None, page: str | None) -> ChangePage:
        number = int(page or 1)
        rows = self._json(f"/api/v1/chats/list?page={number}", "a list of chats")
        if not isinstance(rows, list):
            raise ApiSourceError(f"api source '{self.source}': /api/v1/chats/list?page={number} is not a list",
                                 hint="check that the source's url= is an Open WebUI server")
        changes, older = [], False
        for row in rows:
            cid = row.get("id") if isinstance(row, dict) else None
            updated = stamp(row.get("updated_at")) if isinstance(row, dict) else None
            if not isinstance(cid, str) or not cid or updated is None:
                raise ApiSourceError(f"api source '{self.source}': a chat on page {number} of "
                                     "/api/v1/chats/list has no id or no updated_at",
                                     hint="check that the source's url= is an Open WebUI server")
            if since is not None and updated < since:
                older = True  # newest first: the rest of the list is older than the cursor
                continue
            changes.append(Change(cid, updated))
        done = not rows or older
        return ChangePage(changes, None if done else str(number + 1))

    def fetch(self, conversation_id: str) -> bytes:
        path = f"/api/v1/chats/{urllib.parse.quote(conversation_id, safe='')}"
        row = self._json(path, "one chat")
        if not isinstance(row, dict) or not isinstance(row.get("chat"), dict):
            raise ApiSourceError(f"api source '{self.source}': GET {self.url}{path} is not a chat row",
                                 hint="check that the source's url= is an Open WebUI server")
        return json.dumps([row], ensure_ascii=False).encode("utf-8")
