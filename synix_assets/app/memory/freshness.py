"""Whether a served project changed: file stats (and a PostgreSQL store's data version) decide
when the pipeline is reloaded and `synix status` recomputed, so a page load does not replan."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from synix_assets.project import ProjectPaths


def mtime(path: Path) -> tuple | None:
    """(mtime, size) of a file, None when it is missing: a cheap change stamp."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class ProjectStatus:
    """`synix status` of one project, recomputed only when the project changed since."""

    def __init__(self, paths: ProjectPaths, pipeline: Callable[[], object]):
        self.paths = paths
        self._pipeline = pipeline  # the current pipeline (reloaded when pipeline.py changes)
        self._lock = threading.Lock()
        self._status: tuple[tuple, dict] | None = None
        self._version_store = None  # a PostgreSQL store's version probe (see _store_state)

    def _project_state(self) -> tuple:
        """What staleness depends on: pipeline.py, the store (and its WAL), the export files.
        Stat calls only (one query for a PostgreSQL store), so comparing it is cheap."""
        pipeline = self._pipeline()
        files = [self.paths.pipeline_file]
        for src in pipeline.sources.values():
            folder = pipeline.resolve(src.path)
            files += sorted(folder.rglob("*")) if folder.is_dir() else [folder]
        return (*((str(f), mtime(f)) for f in files), *self._store_state())

    def _store_state(self) -> tuple:
        store = self.paths.store
        if not self.paths.on_postgres:
            return tuple((str(f), mtime(f)) for f in (store, store.with_name(store.name + "-wal")))
        from synix_resources.store.artifact_store import ArtifactStore

        if self._version_store is None:  # callers hold _lock
            self._version_store = ArtifactStore(store, read_only=True)
        return (("store", self._version_store.data_version()),)

    def get(self) -> dict:
        """`synix status` (a full plan: seconds on a large project), recomputed only when the
        project changed since the last time."""
        from synix_assets.app.status import project_status

        with self._lock:
            state = self._project_state()
            if self._status is None or self._status[0] != state:
                status = project_status(self.paths)
                # Keyed by the state *after*: planning opens the store, and closing it may
                # checkpoint the WAL, which changes the files' stats once.
                self._status = (self._project_state(), status)
            return self._status[1]

    def close(self) -> None:
        with self._lock:
            if self._version_store is not None:
                self._version_store.close()
                self._version_store = None
