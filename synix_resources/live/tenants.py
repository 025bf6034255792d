"""The tenant registry of a home (`HOME/tenants.db`): names and the hashes of their API tokens.

Only a SHA-256 of each token is stored (tokens are 256-bit random, so a plain hash is enough; a
stolen registry gives no usable token). A request's token is hashed and looked up, then compared
in constant time; the tenant it belongs to is the only one it opens.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from synix_resources.errors import TenantError
from synix_resources.names import check_tenant
from synix_resources.store.connection import StoreConnection
from synix_resources.store.migrations import MigrationRegistry

if TYPE_CHECKING:  # sqlite_utils (and the numpy it imports) loads only when a migration runs
    from sqlite_utils import Database

TENANT_MIGRATIONS = MigrationRegistry()
TOKEN_PREFIX = "synix_"


@TENANT_MIGRATIONS
def tenants001_registry(db: Database) -> None:
    db.execute("CREATE TABLE tenants (name TEXT PRIMARY KEY, created_at TEXT NOT NULL)")
    db.execute("""CREATE TABLE tokens (token_hash TEXT PRIMARY KEY,
        tenant TEXT NOT NULL REFERENCES tenants(name) ON DELETE CASCADE, created_at TEXT NOT NULL)""")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class TenantRegistry(StoreConnection):
    """`HOME/tenants.db`."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        super().__init__(path, migrations=TENANT_MIGRATIONS, read_only=read_only)

    def add(self, name: str) -> str:
        """Register a tenant and return its new token (shown once, stored only as a hash)."""
        check_tenant(name)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._write("creating a tenant") as conn:
            if conn.execute("SELECT 1 FROM tenants WHERE name = ?", (name,)).fetchone():
                raise TenantError(f"tenant {name!r} already exists", hint="choose another name")
            conn.execute("INSERT INTO tenants (name, created_at) VALUES (?, ?)", (name, now))
            conn.execute("INSERT INTO tokens (token_hash, tenant, created_at) VALUES (?, ?, ?)",
                         (token_hash(token), name, now))
        return token

    def names(self) -> list[str]:
        with self._read("listing tenants") as conn:
            return [r[0] for r in conn.execute("SELECT name FROM tenants ORDER BY name")]

    def list(self) -> list[dict]:
        with self._read("listing tenants") as conn:
            rows = conn.execute("SELECT t.name, t.created_at, COUNT(k.token_hash) FROM tenants t "
                                "LEFT JOIN tokens k ON k.tenant = t.name GROUP BY t.name ORDER BY t.name")
            return [{"name": n, "created_at": c, "tokens": k} for n, c, k in rows]

    def exists(self, name: str) -> bool:
        with self._read("reading tenants") as conn:
            return conn.execute("SELECT 1 FROM tenants WHERE name = ?", (name,)).fetchone() is not None

    def tenant_of(self, token: str | None) -> str | None:
        """The tenant this token belongs to, or None."""
        if not token:
            return None
        digest = token_hash(token)
        with self._read("checking a token") as conn:
            row = conn.execute("SELECT token_hash, tenant FROM tokens WHERE token_hash = ?", (digest,)).fetchone()
        if row is None or not hmac.compare_digest(row[0], digest):
            return None
        return row[1]

    def token_hashes(self, name: str) -> list[str]:
        with self._read("reading tokens") as conn:
            return [r[0] for r in conn.execute("SELECT token_hash FROM tokens WHERE tenant = ?", (name,))]

    def remove(self, name: str) -> None:
        with self._write("deleting a tenant") as conn:
            conn.execute("DELETE FROM tokens WHERE tenant = ?", (name,))
            if conn.execute("DELETE FROM tenants WHERE name = ?", (name,)).rowcount == 0:
                raise TenantError(f"no tenant {name!r} in {self.path.parent}",
                                  hint="`synix tenant list --home …` shows the tenants")
