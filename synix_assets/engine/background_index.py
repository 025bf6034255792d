"""A large build's search indexes, written in a second process while Dagster records the layers
(from SYNIX_BACKGROUND_INDEX_MIN partitions to build, 200 by default).

Writing the search index is about a fifth of a cold build's CPU (1.6 of 7.8 CPU seconds at 500
conversations, docs/benchmarks.md session 14), and it used to wait, on the one thread that drives
Dagster, for every layer's Dagster run. The work graph (engine/schedule.py) has stored every
layer long before Dagster has recorded them, so a whole build with many partitions to build
starts a second Python process with the graph, and tells it to go the moment the graph finished every
layer cleanly: it runs the same `projections.write_search_index` on the other core while this
process records the layers in Dagster.

Nothing relies on it having run: the projection's Dagster step runs `sync_search_index` itself
as always. That first waits for the background (`take`), then recomputes the index's key from
the store (cheap next to writing: 0.04 of 1.6 s at 500) and finds the index current — and then
reports what the background wrote as its own result, so the step's metadata, `synix run`'s
report and the `on_update` hook (called in this process) are the same as without it. A
background that failed, was stopped, or wrote from a store that changed since leaves the step
to write what is left, exactly as it would have. The index is the same whichever process writes
it: the same code over the same store.

On an otherwise idle 2-core machine it takes a cold build of 500 from 6.9 to 6.1 s (three
alternating pairs, docs/benchmarks.md session 16); on one whose cores are busy with other work
(load 8-11) it made the same build slower, as both processes then wait for a core
(session 14): SYNIX_BACKGROUND_INDEX_MIN=0 turns it off there.
"""
from __future__ import annotations

import json
import logging
import queue
import subprocess
import threading
from dataclasses import dataclass

from synix_resources.process import helper, interrupts
from synix_resources.settings import settings
from synix_resources.store.memory import is_memory_location

log = logging.getLogger("synix.background_index")

POLL_S = 0.2  # how often a wait for the background looks for a signal
GO = "go"  # the line that tells the process every layer is stored
WORKER = "synix_assets.engine.background_index_worker"  # the process's module

_lock = threading.Lock()
_builds: dict[tuple[str, str], "BackgroundIndex"] = {}  # (Synix run id, branch) → its background


@dataclass(frozen=True)
class Written:
    """What the background's `sync_search_index` did: its result and the key it wrote."""
    changed: bool
    detail: dict
    key: str | None


def for_build(ctx, plans: dict) -> "BackgroundIndex | None":
    """The background of this whole build, when it has search indexes and enough to build."""
    names = [n for n, p in ctx.pipeline.projections.items() if p.kind == "search_index"]
    stale = sum(len(p.stale) for p in plans.values())
    least = settings().background_index_min  # 0: off
    if not names or not least or stale < least or ctx.run_id is None or is_memory_location(ctx.paths.store):
        return None
    return BackgroundIndex(ctx.paths, ctx.run_id, names)


def take(run_id: str | None, branch: str, name: str) -> Written | None:
    """Wait for the background of this Synix run to finish projection `name`; what it wrote, or
    None (no background, it was never told to go, or it failed)."""
    with _lock:
        background = _builds.get((run_id, branch)) if run_id else None
    return background.result(name) if background is not None else None


class BackgroundIndex:
    def __init__(self, paths, run_id: str, names: list[str]):
        self.paths, self.run_id, self.names = paths, run_id, list(names)
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()
        self._went = False
        self._results: dict[str, Written | None] = {}
        self._wait = threading.Lock()  # one waiter reads the answers at a time
        self._going = threading.Lock()  # the last two layers may finish at once

    def start(self) -> "BackgroundIndex":
        """Start the process now (its interpreter and imports load while the graph builds)."""
        job = {"root": str(self.paths.root), "branch": self.paths.branch, "run_id": self.run_id,
               "names": self.names}
        self._proc = helper.start(WORKER, job)
        threading.Thread(target=self._read, name="synix-search-index-answers", daemon=True).start()
        with _lock:
            _builds[(self.run_id, self.paths.branch)] = self
        return self

    def _read(self) -> None:
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)  # the process ended

    def go(self) -> None:
        """Every layer is stored: write the indexes now."""
        with self._going:
            if self._proc is None or self._went:
                return
            try:
                self._proc.stdin.write(GO + "\n")
                self._proc.stdin.flush()
            except OSError as exc:  # the process is gone: the step writes the index itself
                log.warning("search index process unavailable (%s); the projection writes it", exc)
                return
            self._went = True

    def result(self, name: str) -> Written | None:
        with self._wait:
            if not self._went:
                return None
            while name not in self._results and len(self._results) < len(self.names):
                try:
                    line = self._lines.get(timeout=POLL_S)
                except queue.Empty:
                    interrupts.raise_if_received()
                    continue
                if line is None:
                    break
                answer = json.loads(line)
                if answer.get("error"):
                    log.warning("search index %s in the background failed (%s); the projection "
                                "writes it", answer["name"], answer["error"])
                    self._results[answer["name"]] = None
                else:
                    self._results[answer["name"]] = Written(answer["changed"], answer["detail"],
                                                            answer["key"])
            return self._results.get(name)

    def stop(self) -> None:
        """End the process (finished or not: the step wrote or will write what is missing)."""
        with _lock:
            if _builds.get((self.run_id, self.paths.branch)) is self:
                del _builds[(self.run_id, self.paths.branch)]
        proc, self._proc = self._proc, None
        if proc is None:
            return
        # one still waiting for its go ends on the closed input; one still writing is ended
        helper.end(proc, grace_s=5 if not self._went or proc.poll() is not None else 0.01)

