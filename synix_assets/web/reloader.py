"""`synix ui` reloads the Dagster code location when the pipeline changes.

Dagster loads definitions once; after an edit to pipeline.py (or a prompt module beside it, or a
branch created or edited) the UI kept the old asset graph and code versions until someone pressed
"Reload definitions", and meanwhile a sensor build, compiled from the new pipeline, made fresh
assets look Unsynced. This thread polls the files that define the graph and, when their
fingerprint changes, asks the webserver to reload the location through its own GraphQL mutation
(the one the Reload button sends).
"""
from __future__ import annotations

import json
import logging
import threading
import urllib.request
from pathlib import Path
from typing import Callable

log = logging.getLogger("synix.ui")

POLL_S = 1.0
RELOAD = ('mutation($name: String!) { reloadRepositoryLocation(repositoryLocationName: $name) '
          '{ __typename } }')


def definition_files(root: Path) -> tuple:
    """(path, mtime_ns, size) of the project's Python files and every branch's pipeline file:
    what `build_defs` reads to make the asset graph."""
    files = [*root.glob("*.py"), *(root / ".synix" / "branches").glob("*/*.py")]
    out = []
    for f in sorted(files):
        try:
            st = f.stat()
        except FileNotFoundError:  # removed between the glob and the stat: the next poll sees it
            continue
        out.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(out)


def reload_location(base_url: str, location: str) -> str:
    """Ask the webserver at `base_url` to reload `location`; returns the mutation's result type."""
    req = urllib.request.Request(f"{base_url}/graphql",
                                 data=json.dumps({"query": RELOAD, "variables": {"name": location}}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        data = json.loads(resp.read())
    return data["data"]["reloadRepositoryLocation"]["__typename"]


class Reloader(threading.Thread):
    """Reloads `location` on the webserver at `base_url` whenever `fingerprint()` changes."""

    def __init__(self, base_url: str, location: str, fingerprint: Callable[[], object],
                 poll_s: float = POLL_S):
        super().__init__(name="synix-ui-reloader", daemon=True)
        self.base_url, self.location, self.fingerprint, self.poll_s = base_url, location, fingerprint, poll_s
        self.stopped = threading.Event()

    def run(self) -> None:
        seen = self.fingerprint()
        while not self.stopped.wait(self.poll_s):
            now = self.fingerprint()
            if now == seen:
                continue
            try:
                result = reload_location(self.base_url, self.location)
            except OSError as exc:  # the webserver not up yet, or going down: try at the next poll
                log.info(f"reload of {self.location} not sent ({exc}); retrying")
                continue
            log.info(f"pipeline changed: reloaded the Dagster code location {self.location} ({result})")
            seen = now

    def stop(self) -> None:
        self.stopped.set()
