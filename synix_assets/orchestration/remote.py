"""`synix run` on a distributed deployment: the same plan and the same per-layer jobs, but each
layer's runs are submitted to the deployment (its webserver's GraphQL API, then the daemon's run
queue and run launcher) instead of executing in this process; the Celery executor puts their steps
on the workers.

A layer's stale partitions are split into chunks of `partitions_per_run` (what
`BackfillPolicy.multi_run` does for a backfill launched from the UI): one run — one Celery task —
per chunk, so the chunks of a layer build on all workers at once. Layers still go one after the
other, as on one machine, because each reads the one before. The projections (search index,
context document) stay in this process: a single writer, after every layer is in the store.

This process keeps the project's build lock for the whole build; the runs it submits carry
`synix/distributed` so their steps do not wait on it (nor on each other). A run whose worker died
is finished by another worker (Celery redelivers its task, scale.toml's visibility_timeout_s);
steps rebuild only what the store does not already hold, so nothing is built twice.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from synix_assets.dagster_defs.jobs import layer_job_name
from synix_assets.dagster_defs.vocabulary import (DISTRIBUTED_TAG, FULL_LAYER_TAG, LAYER_TAG, REPOSITORY,
                                                 STATUS_KEY)
from synix_assets.orchestration.launch import LayerIncomplete, LocalLauncher, range_tags
from synix_resources.errors import ScaleDeploymentError
from synix_resources.process import interrupts

POLL_S = 0.5
SUBMIT_THREADS = 8
STAT_KEYS = ("llm_calls", "tokens_in", "tokens_out", "cost_usd")


class RemoteResult:
    """What the runner reads from a finished run, loaded from the deployment's event log."""

    def __init__(self, instance, run):
        import dagster as dg

        self.run_id = run.run_id
        self.status = run.status
        self.success = run.status == dg.DagsterRunStatus.SUCCESS
        self.all_events = [e.dagster_event for e in instance.all_logs(
            run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE) if e.dagster_event is not None]


def _tail(text: str, keep: int = 300) -> str:
    """The end of a long error: GraphQL errors start with the whole query, the cause comes last."""
    return text if len(text) <= keep else "…" + text[-keep:]


def chunks(positions: list[int], size: int) -> list[list[int]]:
    ordered = sorted(positions)
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


class RemoteLauncher(LocalLauncher):
    """Launches the layer runs of one Synix run on the deployment named by scale.toml."""

    def __init__(self, config, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config = config
        self._local = threading.local()

    @property
    def client(self):
        """This thread's GraphQL client (a client's HTTP transport is not shared between threads)."""
        if getattr(self._local, "client", None) is None:
            from dagster_graphql import DagsterGraphQLClient

            host, port = self.config.host_port
            self._local.client = DagsterGraphQLClient(
                host, port_number=port, use_https=self.config.webserver.startswith("https"))
        return self._local.client

    def tags(self) -> dict[str, str]:
        return {**super().tags(), DISTRIBUTED_TAG: "1"}

    def layer(self, pipeline, layer: str, plan):
        tags = {**self.tags(), LAYER_TAG: layer}
        keys = self.partition_keys(pipeline, layer, plan)
        order = self.partition_order(pipeline, layer, keys)
        if order is None:
            batches = [tags]  # unpartitioned: one run, one step
        elif not plan.stale_keys:
            batches = [{**tags, **range_tags(order, keys)}]  # only retiring: one whole-layer run
        else:
            where = {k: i for i, k in enumerate(order)}
            chunk_tags = {k: v for k, v in tags.items() if k != FULL_LAYER_TAG}
            batches = [{**chunk_tags, **range_tags(order, [order[i] for i in group])}
                       for group in chunks([where[k] for k in keys],  # = the stale partitions here
                                           self.config.partitions_per_run)]
        results = self.wait(pipeline, [layer], self.submit_all(layer, batches))
        chunked = order is not None and bool(plan.stale_keys)
        if chunked and plan.retire:
            # groups that vanished are retired by one whole-layer run once the chunks are in
            results += self.wait(pipeline, [layer], [self.submit(layer, {**tags, **range_tags(order, keys)})])
        elif chunked:
            self.report_chunked_check(layer)
        self.record_stats(layer, plan, results)
        return results[-1]

    def report_chunked_check(self, layer: str) -> None:
        """The layer's `synix_up_to_date` check, evaluated once after all its chunks (each chunk
        plans only its own partitions; a whole-layer run evaluates the check itself)."""
        from synix_assets.dagster_defs.checks import check_evaluation
        from synix_assets.engine.layers import plan_all

        plan = plan_all(self.ctx, self.scan, upto=layer)[layer]
        self.instance.report_runless_asset_event(check_evaluation(self.ctx, layer, self.names.layer(layer), plan))

    def submit_all(self, layer: str, batches: list[dict[str, str]]) -> list[str]:
        """Submit the runs side by side: each submission makes the webserver load the job."""
        if len(batches) == 1:
            return [self.submit(layer, batches[0])]
        with ThreadPoolExecutor(max_workers=min(SUBMIT_THREADS, len(batches))) as pool:
            return list(pool.map(lambda tags: self.submit(layer, tags), batches))

    def submit(self, layer: str, tags: dict[str, str]) -> str:
        from dagster_graphql import DagsterGraphQLClientError

        try:
            return self.client.submit_job_execution(
                layer_job_name(layer, self.names), repository_location_name=self.config.location,
                repository_name=REPOSITORY, run_config=self.run_config, tags=tags)
        except (DagsterGraphQLClientError, OSError) as exc:
            raise ScaleDeploymentError(
                f"could not submit the {layer} run to {self.config.webserver}: "
                f"{_tail(' '.join(str(exc).split()))}",
                hint=f"start the deployment (docs/scale.md) or remove {self.config.path} to build "
                     f"on this machine") from None

    def wait(self, pipeline, names: list[str], run_ids: list[str]) -> list[RemoteResult]:
        """Until every run ended (bounded by run_timeout_s); then fail like an in-process run."""
        import dagster as dg

        self.dagster_runs.extend(run_ids)
        deadline = time.monotonic() + self.config.run_timeout_s
        pending, done = list(run_ids), {}
        try:
            while pending:
                if interrupts.received():
                    raise KeyboardInterrupt
                for run_id in list(pending):
                    run = self.instance.get_run_by_id(run_id)
                    if run is None:
                        raise ScaleDeploymentError(
                            f"run {run_id} submitted to {self.config.webserver} is not in this "
                            f"project's Dagster instance", hint="give the deployment and "
                            "<project>/.synix/dagster/dagster.yaml the same run storage")
                    if run.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
                                      dg.DagsterRunStatus.CANCELED):
                        done[run_id] = RemoteResult(self.instance, run)
                        pending.remove(run_id)
                if pending and time.monotonic() > deadline:
                    raise ScaleDeploymentError(
                        f"{len(pending)} run(s) of {', '.join(names)} unfinished after "
                        f"{self.config.run_timeout_s:.0f}s (first: {pending[0]})",
                        hint="check the workers (`celery inspect active`) and the daemon; "
                             "`synix run` resumes what is left")
                if pending:
                    time.sleep(POLL_S)
        except BaseException:
            self.terminate(pending)
            raise
        results = [done[r] for r in run_ids]
        for result in results:
            if not result.success:
                self._check_failures(pipeline, result, names)
        ended = [r for r in results if not r.success and not r.all_events]
        if ended and names[0] in pipeline.steps:  # a run that ended without a failed step
            from synix_assets.engine.layers import plan_layer

            failed = {f.group_key for f in self.ctx.store.failures(layer=names[0], run_id=self.ctx.run_id)}
            left = [k for k in plan_layer(self.ctx, names[0], self.scan, None).stale_keys if k not in failed]
            if left:
                raise LayerIncomplete(names[0], f"Dagster run {ended[0].run_id} ended "
                                                f"{ended[0].status.value} ({len(left)} partition(s) not built)")
        return results

    def terminate(self, run_ids: list[str]) -> None:
        if not run_ids:
            return
        from dagster_graphql import DagsterGraphQLClientError

        try:
            self.client.terminate_runs(run_ids)
        except (DagsterGraphQLClientError, OSError):
            pass  # the runs are marked ended by close_open_runs when this build is recorded

    def record_stats(self, layer: str, plan, results: list[RemoteResult]) -> None:
        """The layer's totals over all its runs, from the materializations they recorded
        (each chunk's own totals would overwrite one another's)."""
        import dagster as dg

        totals = dict.fromkeys((*STAT_KEYS, "from_response_cache"), 0)
        for result in results:
            for entry in self.instance.all_logs(result.run_id,
                                                of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
                md = entry.asset_materialization.metadata if entry.asset_materialization else {}
                status = md.get(STATUS_KEY)
                if status is None or status.value != "built":
                    continue
                for key in STAT_KEYS:
                    if key in md:
                        totals[key] += md[key].value
                totals["from_response_cache"] += bool("from_response_cache" in md and md["from_response_cache"].value)
        # what this build stored, also by a worker that died before its step recorded it
        built = self.ctx.store.built_in_run(self.ctx.run_id).get(layer, 0)
        failed = len(self.ctx.store.failures(layer=layer, run_id=self.ctx.run_id))
        self.ctx.store.record_layer_stats(self.ctx.run_id, layer, {
            "built": built, "cached": len(plan.cached), "failed": failed,
            "blocked": len(plan.blocked), "runs": len(results), **totals})
