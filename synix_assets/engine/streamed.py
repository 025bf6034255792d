"""One layer built in a thread while the caller takes each partition the moment it is stored.

A layer's Dagster step (a run from the UI, a backfill, the sensor, `dagster asset materialize`)
records one materialization per partition; built in the step's own thread, the layer returned
only at its end, so a 99-episode step showed its 99 partitions at once, 16 s after the first was
stored. Here `build_layer` runs in a thread — the same engine code, the same artifacts — and
every partition whose answer the store holds is handed over through `on_stored` as it arrives,
so the step records it within its event-log flush (well under a second). A `synix run` work graph
does the same for its layers (engine/schedule.py `arrivals`).

Only transform layers stream (one call per partition, each final once stored); the other kinds
report their outcomes at the end as before (a rollup's map-reduce stores intermediate calls, a
fold is one artifact).
"""
from __future__ import annotations

import dataclasses
import queue
import threading
from typing import Iterator

from synix_assets.engine.layers import build_layer
from synix_assets.engine.outcomes import LayerResult, PartitionOutcome
from synix_assets.engine.priority import WAIT_S
from synix_resources.process import interrupts


class StreamedBuild:
    """`for outcome in build.arrivals(): …` while the layer builds; then `build.result()`."""

    def __init__(self, ctx, layer: str, scan, keys: set[str] | None):
        self.layer = layer
        self._queue: queue.Queue = queue.Queue()
        self._result: LayerResult | None = None
        self._error: BaseException | None = None
        self._ended = False  # the end of the arrivals was taken
        self._streams = ctx.pipeline.steps[layer].kind == "transform"
        built_ctx = dataclasses.replace(ctx, on_stored=self._stored) if self._streams else ctx
        self._thread = threading.Thread(target=self._run, args=(built_ctx, scan, keys),
                                        name=f"synix-build-{layer}", daemon=True)
        self._thread.start()

    def _stored(self, layer: str, outcome: PartitionOutcome) -> None:
        if layer == self.layer and outcome.status == "built":
            self._queue.put(outcome)

    def _run(self, ctx, scan, keys) -> None:
        try:
            self._result = build_layer(ctx, self.layer, scan, keys)
        except BaseException as exc:  # re-raised in the caller's thread by result()
            self._error = exc
        finally:
            self._queue.put(None)  # the end of the arrivals

    def arrivals(self) -> Iterator[PartitionOutcome]:
        """Built partitions as they are stored, until the layer is done. Wakes every WAIT_S so a
        signal reaches the caller's thread (a run terminated from the UI) at once."""
        while not self._ended:
            try:
                outcome = self._queue.get(timeout=WAIT_S)
            except queue.Empty:
                interrupts.raise_if_received()
                continue
            if outcome is None:
                self._ended = True
                return
            yield outcome

    def result(self) -> LayerResult:
        """The layer's result once the thread ended, or its own exception."""
        for _ in self.arrivals():  # the caller stopped taking arrivals: drain to the end
            pass
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
