"""`synix run`: build a project through Dagster, one single-run backfill per layer that changed.

The plan (Synix's materialization keys) decides which layers have work; for each, the stale
partitions are registered with Dagster and one in-process run materializes the range that covers
them. Layers with nothing to do launch nothing, and a build whose inputs, pipeline, projections
and model are all unchanged since the last clean build returns before loading Dagster at all.

A whole build whose layer steps execute in this process also starts the work graph
(engine/schedule.py): the layers are built overlapping, each partition as soon as its inputs are
stored, and each layer's Dagster run records what the graph built for it instead of building it.

A layer that does not finish stops the build before anything reads it: a signal (the build is
"interrupted", exit 128+signal), or an exception that is not a recorded partition failure (the
build fails naming the layer, its unfinished partitions and the cause). Partitions that failed on
their own (an LLM error, a prompt that raised, an output its validator refused) are recorded; the
1:1 partition above one waits (blocked), a rollup, fold or agent step over many is built from what
is there with the gap recorded (design §10.2), and everything else is built. Either way the clean-build marker is not recorded, so the next
`synix run` plans again and resumes exactly what is left.
"""
from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from synix_assets.engine.agent_memory import apply_log
from synix_assets.app.branches import finish_pending_promote
from synix_assets.app.ledger import begin_synthesis, end_synthesis
from synix_assets.app.sync import record_definition
from synix_assets.engine import schedule
from synix_assets.engine.build_scope import build_fingerprint, drop_undeclared_layers, selected_layers
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import CLEAN_BUILD_KEY, settle_failures
from synix_assets.engine.projections import outputs_exist
from synix_assets.forget import finish_pending_forget
from synix_assets.project import ProjectPaths
from synix_assets.project.scale_config import load_scale_config
from synix_resources.errors import BuildFailed, BuildInterrupted
from synix_resources.llm.factory import make_client
from synix_resources.llm.pricing import TOKENLESS_NOTE, TOKENLESS_PROVIDERS
from synix_resources.process import interrupts, progress
from synix_resources.process.locking import project_lock
from synix_resources.settings import settings

# Everything Dagster (orchestration/, dagster_defs/) is imported inside the functions, once there
# is something to build: a no-op `synix run` returns before Dagster loads.

log = logging.getLogger("synix.run")
INTERRUPTED = "interrupted"
RESUME_HINT = "rerun `synix run` to resume"


@dataclass
class BuildReport:
    run_id: str
    layers: dict[str, dict] = field(default_factory=dict)
    projections: dict[str, dict] = field(default_factory=dict)
    failures: list[dict] = field(default_factory=list)
    skipped_inputs: list[dict] = field(default_factory=list)
    dagster_runs: list[str] = field(default_factory=list)
    provider: str = ""
    branch: str = "main"
    seconds: float = 0.0
    noop: bool = False
    status: str = "completed"  # completed | failed | interrupted
    memories: dict | None = None  # what replaying the agents' memory log wrote (None: no log)

    def total(self, key: str) -> float:
        return sum(v.get(key, 0) for v in self.layers.values())

    def __str__(self) -> str:
        """The design's run summary (§8.3)."""
        mark = "✓ Completed" if self.status == "completed" else f"✗ {self.status.title()}"
        minutes, seconds = divmod(round(self.seconds), 60)
        took = f"{minutes}m {seconds}s" if minutes else f"{self.seconds:.1f}s"
        reused = int(self.total("from_response_cache"))
        answered = f" ({reused:,} answered from the LLM response cache)" if reused else ""
        tokens = f"Tokens: {int(self.total('tokens_in')):,} input / {int(self.total('tokens_out')):,} output"
        if self.provider.split(":")[0] in TOKENLESS_PROVIDERS and self.total("llm_calls"):
            tokens += f" ({TOKENLESS_NOTE}; set ANTHROPIC_API_KEY or SYNIX_LLM_PROVIDER to use one)"
        return (f"{mark} in {took}\n  Records: {int(self.total('built')):,} created{answered}\n"
                f"  LLM calls: {int(self.total('llm_calls')):,}\n  {tokens}")

    __repr__ = __str__

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "branch": self.branch, "status": self.status,
                # built: records made this run, of which from_response_cache took every answer
                # from the LLM response cache (no model call); cached: records already current
                "layers": {k: {"built": v.get("built", 0),
                               "from_response_cache": v.get("from_response_cache", 0),
                               "cached": v.get("cached", 0), "failed": v.get("failed", 0),
                               **({"unfinished": v["unfinished"]} if v.get("unfinished") else {})}
                           for k, v in self.layers.items()},
                "llm_calls": int(self.total("llm_calls")), "tokens_in": int(self.total("tokens_in")),
                "tokens_out": int(self.total("tokens_out")),
                "cost_usd": round(self.total("cost_usd"), 6), "seconds": round(self.seconds, 3),
                "provider": self.provider, "failures": self.failures,
                "projections": self.projections, "skipped_inputs": self.skipped_inputs,
                **({"memories": self.memories} if self.memories is not None else {})}


def run_build(paths: ProjectPaths, *, select: str | None = None, from_layer: str | None = None,
              full: bool = False, batch: bool = False, replay: bool = False,
              llm_config: dict | None = None, lock_timeout_s: float | None = None,
              progress: Callable[[str, str, dict], None] | None = None,
              dagster_logs: bool = False, instance=None, run_tags: dict | None = None) -> BuildReport:
    """Build the project. Raises BuildFailed (after storing everything that succeeded) if any
    partition or layer failed, and BuildInterrupted on SIGINT/SIGTERM (what finished is kept).
    `dagster_logs` shows Dagster's own error records (stack traces) on the terminal.
    `instance`/`run_tags`: the Dagster instance and extra run tags when the build runs inside a
    Dagster run (the `synix_build_all` job); else the project's own home."""
    started = time.monotonic()
    notify = progress or (lambda *a: None)
    with interrupts.watching():
        try:
            # an interrupted forget comes first (its rebuild is this function)
            finish_pending_forget(paths, llm_config=llm_config, rebuild=run_build)
            paths.state_dir.mkdir(parents=True, exist_ok=True)
            if lock_timeout_s is None:
                lock_timeout_s = settings().lock_timeout_s
            with project_lock(paths.lock, timeout_s=lock_timeout_s):
                finish_pending_promote(paths)  # an interrupted promote ends before main is read
                pipeline = paths.load_pipeline()
                layers = selected_layers(pipeline, select, from_layer)
                # the agents' writes are inputs of every build: their records are made (again)
                # from the log first, so a write whose answer said `applied: false` is not lost
                memories = apply_log(paths)
                store = paths.open_store()
                llm_settings = {"cache_path": str(paths.llm_cache), "replay": replay, **(llm_config or {})}
                try:
                    # the evidence ledger takes in what is new (beside the build when there is much
                    # to read); a clean whole build marks it synthesised up to there (the
                    # 15-minute schedule's mark)
                    evidence = begin_synthesis(paths, pipeline, store)
                    whole = select is None and from_layer is None
                    try:
                        report = _run(paths, pipeline, layers, store, llm_settings, full=full,
                                      batch=batch, whole=whole, notify=notify,
                                      started=started, dagster_logs=dagster_logs,
                                      instance=instance, run_tags=run_tags)
                    except (BuildInterrupted, KeyboardInterrupt):
                        evidence.stop()
                        raise
                    except BaseException:  # a failed build still leaves the ledger fed
                        evidence.wait()
                        raise
                    report.memories = memories
                    if whole and report.status == "completed":
                        end_synthesis(paths, evidence)
                    else:
                        evidence.wait()
                    return report
                finally:
                    store.close()
        except KeyboardInterrupt:  # before any run was recorded: nothing to mark
            raise BuildInterrupted(INTERRUPTED, signal_number=interrupts.signal_number(),
                                   hint=RESUME_HINT) from None


def _run(paths, pipeline, layers, store, llm_settings, **options) -> BuildReport:
    # The Dagster instance and the LLM client a build opens are closed when it ends, however it
    # ends: a long-lived process (the server, the live worker, a test session) builds many times.
    with contextlib.ExitStack() as resources:
        return _run_in(resources, paths, pipeline, layers, store, llm_settings, **options)


def _run_in(resources, paths, pipeline, layers, store, llm_settings, *, full, batch, whole, notify,
            started, dagster_logs, instance=None, run_tags=None) -> BuildReport:
    # The plain client decides the no-op case; Dagster is imported only when something is built.
    client = make_client(**llm_settings)
    run_id = uuid.uuid4().hex
    ctx = BuildContext(pipeline, store, client, paths, run_id=run_id, batch=batch)
    report = BuildReport(run_id, provider=ctx.llm_identity, branch=paths.branch)
    scan = ctx.reader.scan()
    report.skipped_inputs = [{"file": f, "error": e} for f, e in scan.failed_files] + \
        [{"file": f, "conversation_id": c, "reason": r} for f, c, r in scan.skipped]
    fingerprint = build_fingerprint(ctx, scan, layers)
    if whole:  # a branch whose pipeline dropped a layer stops pointing at it
        drop_undeclared_layers(store, pipeline)
    # before anything is planned or built: a failure whose partition is current again, or whose
    # input is gone, must block nothing (nor keep this build from being a no-op)
    settle_failures(ctx, scan)
    clean = not store.failures() and not scan.failed_files and outputs_exist(ctx)
    if whole and not full and clean and store.get_meta(CLEAN_BUILD_KEY) == fingerprint:
        for layer in layers:
            n = store.current_count(layer)
            report.layers[layer] = {"built": 0, "cached": n, "failed": 0, "llm_calls": 0}
            notify(layer, "done", report.layers[layer])
        report.noop = True
        report.seconds = time.monotonic() - started
        client.close()
        return report

    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_assets.dagster_defs.vocabulary import BRANCH_TAG, TRIGGER_CLI, TRIGGER_TAG
    from synix_assets.orchestration.drive import build_layers, make_launcher
    from synix_assets.orchestration.launch import DEBUG_LOGS, QUIET_LOGS, LayerIncomplete
    from synix_assets.orchestration.runs import settle_abandoned_runs

    resources.callback(client.close)  # the build's client: the work graph's calls go through it
    settle_abandoned_runs(paths, store, ctx.llm_identity)  # a killed earlier build must not stay "running"
    store.start_run(pipeline.name, layers, run_id=run_id)
    store.delete_meta(CLEAN_BUILD_KEY)  # recorded again only if this build finishes
    # tags of every Dagster run this build launches (trigger/branch; the layer is added per run)
    ctx.run_tags = {TRIGGER_TAG: TRIGGER_CLI, BRANCH_TAG: paths.branch, **(run_tags or {})}
    work = None
    try:
        scale = load_scale_config(paths.root)
        with progress.listening(lambda layer, n: notify(layer, "progress", {"done": n})):
            # A whole build overlaps its layers in a work graph (engine/schedule.py), started
            # before Dagster is even imported, so the first LLM calls go out while it loads. Not
            # on a distributed deployment: its workers build the layers, and a step there cannot
            # take this process's results.
            if whole and not full and scale is None and schedule.usable(ctx, layers):
                work = schedule.WorkGraph(ctx, layers, scan).start()
            try:
                instance = instance or resources.enter_context(dagster_instance(paths))
                # the definitions bring Dagster in step with the store, leaving what this build
                # stores meanwhile to its own runs
                logs = DEBUG_LOGS if dagster_logs else QUIET_LOGS
                launch = make_launcher(paths, ctx, scan, instance, logs, report, llm_settings,
                                       scale, run_build, work)
                build_layers(ctx, launch, pipeline, layers, scan, full, whole, report, notify,
                             store, work)
            finally:
                if work is not None:
                    work.stop()
    except KeyboardInterrupt:
        report.status = INTERRUPTED
    except LayerIncomplete as exc:
        report.status = "failed"
        report.failures.append({"layer": exc.layer, "group_key": "*", "error": exc.cause})
    except BaseException as exc:  # recorded on the run, then raised as it came
        _finish(ctx, instance, report, started, "failed", f"{type(exc).__name__}: {exc}")
        raise
    report.failures = [{"layer": f.layer, "group_key": f.group_key, "error": f.error}
                       for f in store.failures(run_id=run_id)] + report.failures
    blocked = {l: v["blocked"] for l, v in report.layers.items() if v.get("blocked")}
    # built from what was there, without partitions that failed below (design §10.2)
    gaps = {l: v["partial"] for l, v in report.layers.items() if v.get("partial")}
    if report.status == "completed" and not report.failures and (blocked or gaps):
        # blocked by, or built around, failures this build did not retry (a layer above was
        # selected): the memory is not complete, so the build is no success either
        report.failures = [{"layer": f.layer, "group_key": f.group_key, "error": f.error,
                            "recorded_in": f.run_id} for f in store.failures()]
    if report.status == "completed" and report.failures:
        report.status = "failed"
    _name_partitions(store, report.failures)
    _finish(ctx, instance, report, started, report.status, None)
    if report.status == INTERRUPTED:
        raise BuildInterrupted(INTERRUPTED, signal_number=interrupts.signal_number(),
                               hint=RESUME_HINT, report=report)
    if report.failures:
        raise BuildFailed(_failure_line(report.failures, blocked, gaps), hint=_failure_hint(report.failures),
                          report=report, permanent=_all_permanent(report))
    if whole and not scan.failed_files:
        store.set_meta(CLEAN_BUILD_KEY, fingerprint)
        record_definition(ctx)
    return report


def _finish(ctx, instance, report, started, status: str, error: str | None) -> None:
    """Record how the run ended; a run that did not complete leaves no Dagster run open."""
    report.seconds = time.monotonic() - started
    stats = {"layers": report.layers, "projections": report.projections,
             "seconds": round(report.seconds, 3), "llm_calls": int(report.total("llm_calls"))}
    if error:
        stats["error"] = error
    ctx.store.finish_run(ctx.run_id, status, stats)
    if status != "completed" and instance is not None:
        from synix_assets.orchestration.runs import close_open_runs

        close_open_runs(instance, ctx.run_id, outcome=status, cancel=status == INTERRUPTED,
                        message=f"Synix run {ctx.run_id} {status}" + (f": {error}" if error else ""))


def _name_partitions(store, failures: list[dict]) -> None:
    """Each failure's `partition`: the key Dagster shows for it (a conversation's readable
    name), which is what a person looks for in the UI or passes to `--partition`."""
    names = store.partition_names({f["group_key"] for f in failures})
    for f in failures:
        f["partition"] = names.get(f["group_key"], f["group_key"])


def _failure_line(failures: list[dict], blocked: dict[str, int] | None = None,
                  gaps: dict[str, int] | None = None) -> str:
    whole = [f for f in failures if f["group_key"] == "*"]
    if whole:
        return f"{whole[0]['layer']} did not finish: {whole[0]['error']}"
    first = failures[0]
    names = ", ".join(f"{f['layer']}/{f.get('partition', f['group_key'])}" for f in failures[:5])
    more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
    held = ", ".join(f"{layer} ({n})" for layer, n in (blocked or {}).items())
    around = ", ".join(f"{layer} ({n})" for layer, n in (gaps or {}).items())
    waits = "; ".join(x for x in (f"blocked: {held}" if held else "",
                                  f"built with a gap: {around}" if around else "") if x)
    if all("recorded_in" in f for f in failures):  # none failed in this build
        return (f"{waits} — wait(s) for {len(failures)} partition(s) that failed in an "
                f"earlier build ({names}{more}); first error: "
                f"{first['layer']}/{first.get('partition', first['group_key'])}: {first['error']}")
    return (f"{len(failures)} partition(s) failed ({names}{more})"
            + (f", blocking {held}" if held else "")
            + (f", built around by {around}" if around else "") + "; first error: "
            f"{first['layer']}/{first.get('partition', first['group_key'])}: {first['error']}")


def _failure_hint(failures: list[dict]) -> str:
    if any(f["group_key"] == "*" for f in failures):
        return ("what finished was kept and nothing downstream was built from the rest; fix the "
                "cause and `synix run` builds the unfinished partitions")
    if all("recorded_in" in f for f in failures):
        return ("fix the cause, then run the whole build (`synix run`, no --select/--from): it "
                "retries the failed partitions and builds what they block")
    return "everything else was built and kept; `synix run` retries only the failed partitions"


def _all_permanent(report) -> bool:
    """Every partition this build failed failed for good (a refusal, a 4xx answer), and nothing
    else went wrong: the live outbox then dead-letters the batch instead of retrying it."""
    failed = sum(v.get("failed", 0) for v in report.layers.values())
    permanent = sum(v.get("permanent_failures", 0) for v in report.layers.values())
    return 0 < failed == permanent == len(report.failures)
