"""The work graph of one `synix run`: layers overlap instead of waiting for each other.

Without it, each layer is one Dagster run and waits for the whole layer above, so month 1's
rollup waits for month 12's episodes and the fold starts after the last rollup. The graph builds
every layer of a whole build in this process, a thread per layer, each partition as soon as its
inputs are stored:

- the source merge (transcripts) first, then the transforms over it;
- a period rollup as soon as every episode of its period is stored;
- the fold item by item, as soon as the rollup at its position and every earlier one exist
  (`fold.build_streaming`), when the fold orders by group key and has nothing to resume from.

LLM calls go through one priority scheduler with the client's concurrency (engine/priority.py):
deeper levels first (the fold, then rollups, then transforms), transform calls period by period,
so the rollups and the fold are never stuck behind the remaining episodes.

Every partition is built by the same engine code as before (`build_layer`, the step modules with a
key subset), so artifacts are byte-identical; only the order in time changes. Dagster still
records every layer: the build launches each layer's run once the graph finished it, and the
layer's asset step takes the graph's result (`wait`) instead of building — while the graph goes
on with the layers below. The graph reaches the asset steps only through the definitions that
build compiled for itself (`compile_defs(..., work=graph)`), and a step uses it only for a run of
the same Synix run; a run launched any other way (the UI, the sensor, `dagster asset
materialize`) has no graph and builds as before.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

from synix_assets.engine import aggregate, background_index, fold
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import build_layer, is_source_merge, plan_all
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome
from synix_assets.engine.periods import period_of
from synix_assets.engine.priority import WAIT_S, GraphStopped, _PriorityLLM, _PriorityPool, _wait_for
from synix_resources.errors import LLMError
from synix_resources.process import interrupts, progress

log = logging.getLogger("synix.schedule")


def _group_of(request) -> str:
    """Step modules label a partition's request `<layer>/<group key>`."""
    return (request.label or "").partition("/")[2]


def usable(ctx, layers: list[str]) -> bool:
    """A whole build with LLM work: the graph can only help there."""
    return not ctx.batch and any(ctx.pipeline.steps[l].kind != "merge" for l in layers)


class WorkGraph:
    """One build's layers, each in its own thread, as described above."""

    def __init__(self, ctx, layers: list[str], scan):
        self.ctx, self.layers, self.scan = ctx, list(layers), scan
        self.pipeline = ctx.pipeline
        self.plans = plan_all(ctx, scan)
        self.pool = _PriorityPool(max(1, int(getattr(ctx.llm, "concurrency", 16))), self.halted)
        self._cond = threading.Condition()
        self._done: dict[str, threading.Event] = {l: threading.Event() for l in layers}
        self._errors: dict[str, BaseException] = {}
        self._results: dict[str, LayerResult] = {}
        self._stopped = False
        self._watchers: dict[str, list[Callable[[str, bool], None]]] = {l: [] for l in layers}
        self._streams: dict[str, queue.Queue] = {l: queue.Queue() for l in layers}
        self._threads: list[threading.Thread] = []
        self._checked: dict[str, LayerPlan] = {}  # plans of finished layers (plan_for_check)
        self._checked_scan = scan.fingerprint
        # the search indexes of a large build, written in a second process once every layer is
        # stored, while this one records the layers in Dagster
        self.background = background_index.for_build(ctx, {l: self.plans[l] for l in self.layers})

    # -- lifecycle (main thread) ----------------------------------------------------------

    def start(self) -> "WorkGraph":
        if self.background is not None:
            self.background.start()
        for layer in self.layers:
            t = threading.Thread(target=self._drive, args=(layer,), name=f"synix-graph-{layer}", daemon=True)
            self._threads.append(t)
        for t in self._threads:
            t.start()
        return self

    def wait(self, layer: str) -> LayerResult:
        """Block until the graph finished `layer`; its result, or the layer's own exception."""
        _wait_for(self._done[layer])
        if layer in self._errors:
            raise self._errors[layer]
        return self._results[layer]

    def built_cleanly(self, layer: str) -> bool:
        """Whether `layer` is finished with no failed partition. A layer with no LLM call (the
        source merge) is waited for: it is quick, and a run launched after it knows that none of
        its partitions can fail (storage.one_planned_event)."""
        if self.pipeline.steps[layer].kind == "merge":
            _wait_for(self._done[layer])
        return self._done[layer].is_set() and layer not in self._errors \
            and not self._results[layer].failed

    def builds(self, run_id: str | None, layer: str) -> bool:
        """Whether this graph builds `layer` for the Synix run `run_id`: a Dagster run of another
        Synix run (the UI, the sensor) compiled from the same definitions builds by itself."""
        return run_id == self.ctx.run_id and layer in self.layers

    def plan_for_check(self, ctx, scan, layer: str) -> dict[str, LayerPlan]:
        """The plan up to `layer` for its `synix_up_to_date` check (`plan_all(upto=layer)`). A
        layer the graph has finished cannot change before the build ends (the build holds the
        project lock and builds each layer once), so the plans the checks made of finished
        layers are kept and each later check plans only what it has not seen: every layer is
        planned once per build instead of once per descendant's check. Kept per export scan: a
        check that scanned changed exports plans everything again."""
        with self._cond:
            if scan.fingerprint != self._checked_scan:
                self._checked, self._checked_scan = {}, scan.fingerprint
            known = dict(self._checked)
        plans = plan_all(ctx, scan, upto=layer, known=known)
        with self._cond:
            if scan.fingerprint == self._checked_scan:
                self._checked.update({l: p for l, p in plans.items() if self._finished(l)})
        return plans

    def _finished(self, layer: str) -> bool:
        return layer in self._done and self._done[layer].is_set() and layer not in self._errors

    def halted(self) -> bool:
        """Stopped, or a Ctrl-C/SIGTERM came: no call starts and no answer is stored any more.
        The signal is read from the watch's wakeup pipe, which the interpreter writes the moment
        it arrives, whichever handler (ours, Dagster's) then runs in the main thread."""
        return self._stopped or bool(interrupts.received())

    def stop(self) -> None:
        """Stop scheduling and storing; the calls in flight finish into the response cache."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.pool.stop()
        for t in self._threads:
            t.join(timeout=60)
        if self.background is not None:
            self.background.stop()

    # -- per-layer drivers (graph threads) --------------------------------------------------

    def _drive(self, layer: str) -> None:
        try:
            self._results[layer] = self._build(layer)
        except BaseException as exc:  # the build re-raises it for this layer (LayerIncomplete)
            self._errors[layer] = exc
        finally:
            with self._cond:
                self._done[layer].set()
                self._cond.notify_all()
                finished = all(d.is_set() for d in self._done.values())
            self._streams[layer].put(None)  # the end of its arrivals
        if finished and self.background is not None and self._clean():
            self.background.go()

    def _clean(self) -> bool:
        """Every layer finished with no error and no failed partition: the store is final."""
        return not self._errors and not self._stopped and \
            not any(r.failed for r in self._results.values())

    def _ctx(self, layer: str) -> BuildContext:
        level = self.pipeline.level(layer)
        rank = self._ranks(layer)

        def priority(request) -> tuple:
            return (-level, rank.get(_group_of(request), 0))
        llm = _PriorityLLM(self.ctx.llm, self.pool, priority, self.halted)
        return BuildContext(self.pipeline, self.ctx.store, llm, self.ctx.paths, run_id=self.ctx.run_id,
                            batch=False, reader=self.ctx.reader, on_stored=self._on_stored)

    def _ranks(self, layer: str) -> dict[str, int]:
        """A transform's partitions ranked by the period of their date (so the earliest period's
        rollup can start first); other layers' partitions by group key."""
        plan = self.plans[layer]
        step = self.pipeline.steps[layer]
        if step.kind != "transform":
            return {k: i for i, k in enumerate(sorted(plan.stale_keys))}
        period = self._period_below(layer) or "month"
        periods = {k: period_of(plan.dates.get(k), period) for k in plan.stale_keys}
        order = {p: i for i, p in enumerate(sorted(set(periods.values())))}
        return {k: order[p] for k, p in periods.items()}

    def _period_below(self, layer: str) -> str | None:
        for name in self.layers:
            step = self.pipeline.steps[name]
            if step.kind == "aggregate" and step.upstream == layer and step.config.get("period"):
                return step.config["period"]
        return None

    def _wait_for(self, layers) -> None:
        for up in layers:
            if up not in self._done:
                continue
            with self._cond:
                while not self._done[up].is_set() and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    raise GraphStopped("stopped")
            if up in self._errors:
                raise GraphStopped(f"{up} did not finish")

    def _on_stored(self, layer: str, outcome: PartitionOutcome) -> None:
        """A partition's LLM answer was stored (or its failure recorded): wake what waits for it,
        and hand a built one to the layer's Dagster step (`arrivals`)."""
        with self._cond:
            for watcher in self._watchers[layer]:
                watcher(outcome.group_key, outcome.status == "built")
            self._cond.notify_all()
        if outcome.status == "built" and self.pipeline.steps[layer].kind == "transform":
            self._streams[layer].put(outcome)

    def arrivals(self, layer: str):
        """Built outcomes of a transform layer as they are stored, until the layer is done (its
        driver then queues None); nothing for the other layers, which no step waits on here."""
        if self.pipeline.steps[layer].kind != "transform":
            return
        stream = self._streams[layer]
        while True:
            try:
                outcome = stream.get(timeout=WAIT_S)  # wakes for a signal, as _wait_for does
            except queue.Empty:
                if self._done[layer].is_set() and stream.empty():
                    return
                continue
            if outcome is None:
                return
            yield outcome

    def _build(self, layer: str) -> LayerResult:
        step = self.pipeline.steps[layer]
        ups = [u for u in step.from_ if u in self.pipeline.steps]
        if is_source_merge(self.pipeline, layer):
            return build_layer(self.ctx, layer, self.scan, None)
        if step.kind == "aggregate" and step.config.get("period") and step.upstream in self._done \
                and self.pipeline.steps[step.upstream].kind == "transform":
            return self._rollups(layer)
        if step.kind == "fold" and step.config["order_key"] == "group_key" \
                and step.upstream in self._done and self.plans[layer].stale \
                and not self.plans[layer].blocked and not fold.has_checkpoints(self.ctx, layer):
            return self._fold(layer)
        self._wait_for(ups)
        return build_layer(self._ctx(layer), layer, None, None)

    def _rollups(self, layer: str) -> LayerResult:
        """Each period as soon as every stale input of it is stored; the rest when the layer
        above is done (then `build_layer` also reports the cached/blocked ones and retires)."""
        step = self.pipeline.steps[layer]
        up, period = step.upstream, step.config["period"]
        up_plan = self.plans[up]
        pending: dict[str, int] = {}
        period_of_key: dict[str, str] = {}
        for key in up_plan.stale_keys:
            p = period_of_key[key] = period_of(up_plan.dates.get(key), period)
            pending[p] = pending.get(p, 0) + 1
        failed: set[str] = set()
        todo = set(self.plans[layer].stale_keys)

        def watch(key: str, ok: bool) -> None:  # under self._cond
            p = period_of_key.get(key)
            if p is None:
                return
            pending[p] -= 1
            if not ok:
                failed.add(p)
        with self._cond:
            self._watchers[up].append(watch)
        ctx = self._ctx(layer)
        done: dict[str, PartitionOutcome] = {}
        while True:
            with self._cond:
                while not self._stopped:
                    ready = {p for p in todo if not pending.get(p) and p not in failed}
                    if ready or self._done[up].is_set():
                        break
                    self._cond.wait()
                if self._stopped:
                    raise GraphStopped("stopped")
                if not ready:
                    break
            todo -= ready
            with progress.counted_from(layer, len(done)):
                built = aggregate.build(ctx, layer, keys=ready)
            done.update({o.group_key: o for o in built.outcomes if o.status in ("built", "failed")})
            self._tell(layer, [o.group_key for o in built.outcomes], built.outcomes)
        self._wait_for([up])
        failures = {k for k, o in done.items() if o.status == "failed"}
        keys = None
        if failures:
            now = self.plans[layer]
            keys = (set(now.stale_keys) | set(now.cached) | set(now.blocked)) - failures
        with progress.counted_from(layer, len(done)):
            return build_layer(ctx, layer, None, keys, done=done)

    def _tell(self, layer: str, keys: list[str], outcomes) -> None:
        status = {o.group_key: o.status for o in outcomes}
        with self._cond:
            for watcher in self._watchers[layer]:
                for k in keys:
                    watcher(k, status.get(k) != "failed")
            self._cond.notify_all()

    def _fold(self, layer: str) -> LayerResult:
        """Fold the rollups in group-key order, each once it and every earlier one exist."""
        step = self.pipeline.steps[layer]
        up = step.upstream
        up_plan = self.plans[up]
        order = sorted(set(up_plan.cached) | set(up_plan.stale_keys))
        ready = set(up_plan.cached)
        broken = []

        def watch(key: str, ok: bool) -> None:  # under self._cond
            if ok:
                ready.add(key)
            else:
                broken.append(key)
        with self._cond:
            self._watchers[up].append(watch)
        ctx = self._ctx(layer)

        def arrivals():
            for key in order:
                with self._cond:
                    while key not in ready and not broken and not self._stopped \
                            and not self._done[up].is_set():
                        self._cond.wait()
                    if self._stopped:
                        raise GraphStopped("stopped")
                    if key not in ready:
                        return  # an input failed or never came: build() sorts it out below
                art = ctx.store.current(up, key)
                if art is None:
                    return
                yield art
        result = fold.build_streaming(ctx, layer, _Until(arrivals(), lambda: self._wait_for([up])))
        if result.failed:  # recorded as failed; building again would pay for the calls twice
            return result
        return build_layer(ctx, layer, None, None, done={o.group_key: o for o in result.outcomes})


class _Until:
    """An iterator that, once exhausted, first waits for `then()` (the layer above to finish), so
    the fold's final check sees the whole sequence."""

    def __init__(self, items, then: Callable[[], None]):
        self._items, self._then = iter(items), then

    def __iter__(self):
        yield from self._items
        self._then()
