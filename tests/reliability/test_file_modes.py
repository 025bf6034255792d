"""Memory, audit and prompts are private: `.synix/` and its folders 0700, its files and the
context document 0600 (SQLite's -wal/-shm too), for new projects and, silently, old ones."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from synix_assets.app.run import run_build
from synix_resources.store.artifact_store import ArtifactStore


@pytest.fixture(autouse=True)
def _usual_umask():
    old = os.umask(0o022)  # what most users have: new files 0644 unless Synix says otherwise
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def private_paths(root: Path) -> dict[Path, int]:
    state = root / ".synix"
    return {state: 0o700, state / "dagster": 0o700, state / "synix.db": 0o600,
            state / "search.db": 0o600, state / "llm_cache.db": 0o600, state / "build.lock": 0o600,
            root / "context.md": 0o600}


def assert_private(root: Path) -> None:
    wrong = {str(p.relative_to(root)): oct(mode(p)) for p, want in private_paths(root).items()
             if mode(p) != want}
    assert not wrong, wrong
    for entry in (root / ".synix").iterdir():
        assert mode(entry) & 0o077 == 0, (entry, oct(mode(entry)))


def test_a_new_project_keeps_its_state_and_context_private(small_project):
    paths = small_project(3)
    run_build(paths)
    assert_private(paths.root)
    # SQLite's side files take the database's mode: look at them while a writer holds them open
    store = ArtifactStore(paths.store)
    try:
        store.set_meta("probe", 1)
        wal = Path(f"{paths.store}-wal")
        assert wal.exists() and mode(wal) == 0o600
        assert mode(Path(f"{paths.store}-shm")) == 0o600
    finally:
        store.close()


def test_an_existing_world_readable_project_is_tightened_on_the_next_run(small_project):
    paths = small_project(3)
    run_build(paths)
    for path in [*private_paths(paths.root), *(paths.root / ".synix").iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    report = run_build(paths)  # nothing changed: a no-op build still tightens
    assert report.noop
    assert_private(paths.root)
