"""Running the live sensor without a Dagster daemon: for each memory, evaluate `synix_live_sensor`
on the memory's own Dagster instance and execute the `synix_build_all` run it requests, in this
process, until nothing is due. `synix serve --home` does this for every tenant in a background
thread; `synix live drain` does it once.

The builds are the sensor's run requests executed as they are (same job, same tags), so this is
the same road as under `dagster dev`, only the daemon is replaced. Each memory is drained under
its build lock, so two processes never build one memory at once, and a batch left "building" by a
process that was killed (its Dagster run stuck STARTED) is found here: the run is marked failed
and the batch goes back to the outbox with backoff. What the killed build had stored is kept
(materialization keys), so nothing is built twice.
"""
from __future__ import annotations

import logging
import threading
import time

import dagster as dg

from synix_assets.dagster_defs.live_sensor import BATCH_TAG, SENSOR_NAME, live_inboxes, settle
from synix_assets.pipeline.steps import LIVE_INBOX
from synix_resources.errors import StoreLockedError, SynixError
from synix_resources.live.inbox import Inbox

log = logging.getLogger("synix.live")
LLM_ATTEMPTS = 2  # per call inside a build; the outbox retries whole batches with its own backoff
MAX_BATCHES = 20  # per drain: bounded, the next drain continues


def _resources(paths):
    from synix_assets.dagster_defs.compile import resources_for
    from synix_resources.llm.resource import LLMResource

    base = resources_for(paths)
    llm = base["llm"]
    return {**base, "llm": LLMResource(cache_path=llm.cache_path, provider=llm.provider,
                                       max_attempts=LLM_ATTEMPTS)}


def _settle_orphans(instance, paths, now: float) -> None:
    """Holding the build lock, a batch still "building" was left by a process that died (before
    its run started, or with the run stuck STARTED): end such a run as failed and send the batch
    back to the outbox with backoff (a finished run is settled as it ended)."""
    for path in live_inboxes(paths.load_pipeline()):
        if not path.is_file():
            continue
        inbox = Inbox.from_env(path)
        try:
            batch, _, _ = inbox.building()
            if batch is None:
                continue
            runs = instance.get_runs(filters=dg.RunsFilter(tags={BATCH_TAG: batch}))
            if not runs:
                inbox.finish(batch, ok=False, now=now,
                             error="the process building this batch ended before the build started")
                continue
            for run in runs:
                if not run.is_finished:
                    instance.report_run_failed(run, message="the process building this batch ended "
                                                            "before the build finished")
            settle(instance, inbox, now)
        finally:
            inbox.close()


def has_work(paths, now: float | None = None) -> bool:
    """Cheap check before loading Dagster (or even pipeline.py): is anything due in the memory's
    default inbox (the one `synix tenant create` pipelines read)?"""
    inbox_path = paths.root / LIVE_INBOX
    if not inbox_path.is_file():
        return False
    inbox = Inbox.from_env(inbox_path, read_only=True)
    try:
        return inbox.has_work(now=now)
    finally:
        inbox.close()


def drain(paths, *, max_batches: int = MAX_BATCHES, lock_timeout_s: float = 0.0) -> dict:
    """Close idle sessions and build every due batch of one memory; returns what happened."""
    from synix_assets.app.run import run_build
    from synix_assets.dagster_defs.compile import compile_defs
    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_assets.dagster_defs.jobs import BUILD_ALL
    from synix_resources.process.locking import project_lock
    from synix_assets.orchestration.launch import QUIET_LOGS

    out: dict = {"memory": str(paths.root), "builds": []}
    try:
        with project_lock(paths.lock, timeout_s=lock_timeout_s):
            instance = dagster_instance(paths)  # this memory's own Dagster home
            _settle_orphans(instance, paths, time.time())
            defs = compile_defs(paths.root, build=run_build, resources=_resources(paths))
            sensor = defs.resolve_sensor_def(SENSOR_NAME)
            job = defs.resolve_job_def(BUILD_ALL)
            for _ in range(max_batches + 1):
                with dg.build_sensor_context(instance=instance, resources=defs.resources,
                                             definitions=defs) as context:
                    result = sensor(context)
                if not result.run_requests:
                    reason = result.skip_reason
                    out["skip_reason"] = getattr(reason, "skip_message", reason)
                    break
                for request in result.run_requests:
                    run = job.execute_in_process(instance=instance, tags=request.tags,
                                                 run_config=QUIET_LOGS, raise_on_error=False)
                    out["builds"].append({"batch": request.tags[BATCH_TAG], "run_id": run.run_id,
                                          "success": run.success})
    except StoreLockedError:
        out["skip_reason"] = "another process is building this memory"
    return out


class Worker:
    """A background thread draining every tenant of a home that has work, every `interval_s`."""

    def __init__(self, home, *, interval_s: float = 2.0):
        self.home = home
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="synix-live-worker", daemon=True)

    def start(self) -> "Worker":
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for name in self.home.names():
                if self._stop.is_set():
                    return
                paths = self.home.paths(name)
                try:
                    if has_work(paths):
                        drain(paths, max_batches=2)
                except SynixError as exc:  # one tenant's trouble never stops the others
                    log.warning("live build of tenant %s: %s", name, exc.one_line())
                except Exception:  # noqa: BLE001 — logged with its traceback; the thread must
                    # outlive one tenant's unexpected error, or every tenant's builds would stop
                    log.exception("live build of tenant %s failed unexpectedly", name)
            self._stop.wait(self.interval_s)
