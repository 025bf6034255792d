"""A full disk during `synix run` is one line — the storage error naming the file and the fix —
never `internal error`; what was saved stays intact and the next run, with space, finishes.

The disk is a real small tmpfs mounted by the test (as root). Where mounting is not allowed, the
same runs happen under RLIMIT_FSIZE, which makes every write past the limit fail the way a full
disk does (SQLite reports SQLITE_FULL, plain writes EFBIG)."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from synix_resources.disk import is_disk_full
from synix_resources.errors import DiskFullError

pytestmark = pytest.mark.slow

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"
# Small enough to fill up at different moments of a 4-conversation build: creating the store,
# creating Dagster's storage, in the middle of the layers, while finishing the run.
CASES = [("tmpfs", 200), ("tmpfs", 700), ("tmpfs", 1000), ("tmpfs", 1800), ("fsize", 700)]


def _can_mount(tmp: Path) -> bool:
    probe = tmp / "probe"
    probe.mkdir()
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                        capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", str(probe)], check=True)
    return ok


@contextmanager
def small_disk(folder: Path, size_kb: int, mechanism: str = "tmpfs"):
    """Yield (grow, preexec): a tmpfs of `size_kb` at `folder` ("tmpfs", when mounting is
    allowed), else a plain folder and a preexec function capping file sizes at `size_kb`.
    `grow()` gives room again (remount bigger, or lift the cap)."""
    folder.mkdir(parents=True)
    if mechanism == "tmpfs" and _can_mount(folder.parent):
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0755", "tmpfs",
                        str(folder)], check=True)
        try:
            def grow():
                subprocess.run(["mount", "-o", "remount,size=256m", str(folder)], check=True)
            yield grow, None
        finally:
            subprocess.run(["umount", "-l", str(folder)], check=True)
        return
    limit = {"bytes": size_kb * 1024}

    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit["bytes"], limit["bytes"]))

    def grow():
        limit["bytes"] = resource.RLIM_INFINITY
    yield grow, cap


def synix_run(root: Path, preexec) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SYNIX_DEBUG", "SYNIX_PROJECT")}
    env.update({"SYNIX_LLM_PROVIDER": "fake", "NO_COLOR": "1"})
    return subprocess.run([SYNIX, "-p", str(root), "run"], env=env, capture_output=True, text=True,
                          timeout=600, preexec_fn=preexec)


@pytest.mark.parametrize("mechanism, size_kb", CASES, ids=[f"{m}-{k}k" for m, k in CASES])
def test_full_disk_is_one_storage_error_data_stays_intact_and_the_rerun_finishes(
        tmp_path, small_project, mechanism, size_kb, integrity, consistency_problems,
        current_counts):
    disk = tmp_path / "disk"
    with small_disk(disk, size_kb, mechanism) as (grow, cap):
        paths = small_project(4, name="disk/mem")
        first = synix_run(paths.root, cap)
        errors = [l for l in first.stderr.splitlines() if l.startswith("error:")]
        if size_kb == CASES[0][1]:
            assert first.returncode == 1, first.stderr  # the smallest disk surely fills up
        assert "internal error" not in first.stderr and "Traceback" not in first.stderr, first.stderr
        if first.returncode != 0:  # this size filled up: one storage error line, named and fixable
            assert first.returncode == 1, first.stderr
            assert len(errors) == 1 and errors[0].startswith("error: the disk is full: cannot write "), \
                first.stderr
            assert "rerun `synix run`" in errors[0] and str(paths.root) in errors[0]
        grow()  # space again (checking needs some: SQLite opens its -wal/-shm files)
        if paths.store.exists() and paths.store.stat().st_size:
            assert set(integrity(paths.state_dir).values()) <= {"ok"}
            assert consistency_problems(paths.store) == []
        second = synix_run(paths.root, None)
        assert second.returncode == 0, second.stderr
        assert current_counts(paths.store) == {"transcripts": 4, "episodes": 4, "monthly": 2, "core": 1}
        assert set(integrity(paths.state_dir).values()) == {"ok"}


def test_disk_full_is_recognised_through_wrappers():
    import errno
    import sqlite3

    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            raise RuntimeError("wrapped by a library") from inner
    except RuntimeError as outer:
        assert is_disk_full(outer)
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(DiskFullError("x"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))


@contextmanager
def disk_filled_up(folder: Path, mechanism: str):
    """Until the block ends, writes that need space under `folder` fail as on a full disk: the
    tmpfs is filled with a filler file, or (fsize) files may not grow at all."""
    if mechanism == "tmpfs":
        filler = folder / "filler"
        with open(filler, "wb", buffering=0) as fh:
            for size in (1 << 20, 1 << 12, 1):  # big blocks, then the last few pages
                try:
                    while True:
                        fh.write(b"\0" * size)
                except OSError:
                    pass  # full at this block size: exactly the state wanted
        try:
            yield
        finally:
            filler.unlink()
        return
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, old_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)


def _write_with_each_writer(paths, writer: str) -> None:
    from synix_assets.engine.context import BuildContext
    from synix_resources.process.locking import project_lock
    from synix_assets.engine.projections import run_projection
    from synix_assets.pipeline.loader import load_pipeline
    from synix_resources.fingerprints import content_hash
    from synix_resources.llm.cache import ResponseCache
    from synix_resources.llm.types import LLMRequest, LLMResponse
    from synix_resources.search.documents import IndexDoc
    from synix_resources.search.index import SearchIndex
    from synix_resources.store.artifact_store import ArtifactStore

    big = "incompressible words " * 80_000  # 1.7 MB: more than the -wal files already hold
    if writer == "store":
        store = ArtifactStore(paths.store)
        try:
            with disk_filled_up(paths.root.parent, MECHANISM[0]):
                store.put(layer="transcripts", group_key="big", content=big, materialization_key="kbig")
        finally:
            store.close()
    elif writer == "search index":
        index = SearchIndex(paths.search, embeddings=False)
        try:
            with disk_filled_up(paths.root.parent, MECHANISM[0]):
                index.sync("extra", [IndexDoc(artifact_id="big", layer="episodes", level=1,
                                              content=big, content_hash=content_hash(big))])
        finally:
            index.close()
    elif writer == "llm cache":
        cache = ResponseCache(paths.llm_cache)
        request = LLMRequest(prompt=big, label="episodes/big")
        response = LLMResponse(text=big, provider="fake", model="fake-v1")
        try:
            with disk_filled_up(paths.root.parent, MECHANISM[0]):
                cache.put("key-big", request, response)
        finally:
            cache.close()
    elif writer == "context.md":
        store = ArtifactStore(paths.store)
        try:
            store.set_meta("projection:context:key", "stale")  # forces a rewrite
            ctx = BuildContext(load_pipeline(paths.pipeline_file), store, None, paths)
            with disk_filled_up(paths.root.parent, MECHANISM[0]):
                run_projection(ctx, "context")
        finally:
            store.close()
    elif writer == "build lock":
        paths.lock.unlink()  # a new lock file needs a page for the pid (an old one reuses its own)
        with disk_filled_up(paths.root.parent, MECHANISM[0]):
            with project_lock(paths.lock):
                pass


MECHANISM = ["tmpfs"]
WRITERS = {"store": "synix.db", "search index": "search.db", "llm cache": "llm_cache.db",
           "context.md": "context.md", "build lock": "build.lock"}


@pytest.mark.parametrize("mechanism", ["tmpfs", "fsize"])
def test_every_writer_names_its_file_when_the_disk_is_full(tmp_path, small_project, mechanism,
                                                           integrity, current_counts):
    from synix_assets.app.run import run_build

    with small_disk(tmp_path / "disk", 16_384, mechanism) as (_grow, _cap):
        paths = small_project(2, name="disk/mem")
        run_build(paths)
        context_before = (paths.root / "context.md").read_bytes()
        MECHANISM[0] = mechanism if mechanism == "fsize" or _is_tmpfs(paths.root) else "fsize"
        for writer, file_name in WRITERS.items():
            with pytest.raises(DiskFullError) as info:
                _write_with_each_writer(paths, writer)
                pytest.fail(f"{writer}: the write succeeded on a full disk")
            line = info.value.one_line()
            assert "the disk is full" in line and file_name in line and "\n" not in line, line
        # nothing was lost or half written
        assert (paths.root / "context.md").read_bytes() == context_before
        assert not list(paths.root.glob(".context.md.tmp-*"))
        assert set(integrity(paths.state_dir).values()) == {"ok"}
        assert current_counts(paths.store) == {"transcripts": 2, "episodes": 2, "monthly": 2, "core": 1}


def _is_tmpfs(path: Path) -> bool:
    mounts = Path("/proc/mounts").read_text().splitlines()
    target = str(path.resolve())
    best = max((m.split()[1] for m in mounts if target.startswith(m.split()[1])), key=len, default="")
    return any(m.split()[1] == best and m.split()[0] == "tmpfs" for m in mounts) and best != "/"
