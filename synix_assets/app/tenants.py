"""A home of tenants: `HOME/tenants.db` (names, token hashes) and one Synix project per tenant in
`HOME/tenants/<name>/` made from the live template — its own inbox, store, search index, context
document, LLM cache and Dagster home (docs/live.md says why one project per tenant scales).
"""
from __future__ import annotations

import time
from pathlib import Path

from synix_assets.project import ProjectPaths
from synix_resources.errors import ForgetUnverified, TenantError
from synix_resources.live.inbox import Inbox
from synix_resources.folders import new_folder, remove_inside
from synix_resources.live.tenants import TenantRegistry
from synix_resources.names import check_tenant
from synix_resources.private import private_dir

REGISTRY = "tenants.db"
TENANTS_DIR = "tenants"


class TenantHome:
    def __init__(self, root: str | Path):
        self.root = Path(root).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise TenantError(f"{self.root} is a file, not a tenants home", hint="give a folder with --home")
        self._registry: TenantRegistry | None = None

    @property
    def registry(self) -> TenantRegistry:
        if self._registry is None:
            private_dir(self.root)
            self._registry = TenantRegistry(self.root / REGISTRY)
        return self._registry

    def close(self) -> None:
        if self._registry is not None:
            self._registry.close()
            self._registry = None

    def folder(self, name: str) -> Path:
        return self.root / TENANTS_DIR / check_tenant(name)

    def paths(self, name: str) -> ProjectPaths:
        return ProjectPaths(self.folder(name))

    def names(self) -> list[str]:
        return self.registry.names()

    def inbox(self, name: str) -> Inbox:
        return Inbox.from_env(self.folder(name) / ".synix" / "live" / "inbox.db")

    def create(self, name: str) -> dict:
        """A new tenant: its project folder, then its registry row and token (printed once). A
        failure removes only the folder this call made."""
        from synix_assets.app.init import init_project

        folder = self.folder(name)
        if self.registry.exists(name):
            raise TenantError(f"tenant {name!r} already exists in {self.root}", hint="choose another name")
        taken = TenantError(f"{folder} exists but is not a registered tenant",
                            hint="move it aside, or choose another name")
        if folder.exists() or folder.is_symlink():
            raise taken
        private_dir(self.root / TENANTS_DIR)
        with new_folder(folder, self.root / TENANTS_DIR, taken=taken):
            init_project(folder, template="live")
            token = self.registry.add(name)
        return {"name": name, "token": token, "project": str(folder)}

    def list(self) -> list[dict]:
        out = []
        for row in self.registry.list():
            out.append({**row, "project": str(self.folder(row["name"]))})
        return out

    def delete(self, name: str) -> dict:
        """Forget everything of a tenant and prove it: the token stops working first, then its
        folder (inbox, store, index, projections, caches, Dagster home) is removed without
        following links, the registry is purged (VACUUM with secure_delete) and its raw bytes are
        searched for the tenant's token hash and name; nothing may be left."""
        from synix_assets.forget import verify

        folder = self.folder(name)
        hashes = self.registry.token_hashes(name)
        if self.registry.exists(name):
            self.registry.remove(name)
        elif not (folder.exists() or folder.is_symlink()):
            raise TenantError(f"no tenant {name!r} in {self.root}",
                              hint="`synix tenant list --home …` shows the tenants")
        removed = remove_inside(folder, self.root / TENANTS_DIR)  # a link is unlinked, not followed
        self.close()  # the purge needs no connection of ours on the file
        db = self.root / REGISTRY
        verify.purge(db, time.monotonic() + verify.wait_seconds(), f"tenant {name}")
        files = [p for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.is_file()]
        others = [n for n in self.names() if name in n and n != name]
        texts = hashes + ([] if others else [name])
        found = verify.in_child("leftovers", {"files": [str(f) for f in files], "texts": texts, "ids": []})
        leftover_paths = [str(p) for p in verify.walk(self.root) if name in p.relative_to(self.root).parts]
        if found or leftover_paths or folder.exists():
            raise ForgetUnverified(f"tenant {name!r} was deleted but traces remain in "
                                   f"{', '.join(sorted(found) + leftover_paths) or folder}",
                                   hint="stop processes holding its files (a running server) and rerun the delete")
        return {"name": name, "deleted": True, "folder_removed": removed,
                "checked": [str(f) for f in files], "leftovers": []}
