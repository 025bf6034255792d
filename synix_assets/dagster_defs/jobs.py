"""Named jobs: one per layer (what `synix run` launches for a layer), one for the projections, and
`synix_build_all`, which builds the whole memory exactly as `synix run` does.

Dagster runs only assets that share one partitioning in a single run, so "build everything" is an
unpartitioned op that calls the build (app/run.py's `run_build`, passed in) — the same plan and
the same per-layer jobs as `synix run` — which launches one run per layer that has work. The
export sensor launches this job; from the command line it is
`dagster job execute -j synix_build_all` (see docs/dagster.md).
"""

from typing import Any, Callable

import dagster as dg

from synix_assets.dagster_defs.graph import MAIN_NAMES, Names, dagster_name
from synix_assets.dagster_defs.partitions import partitions_for
from synix_assets.dagster_defs.usage import totals_usage
from synix_assets.dagster_defs.vocabulary import (BRANCH_TAG, BUILD_ALL, BUILD_MEMORY_OP, BUILD_RUN_TAG,
                                                 LAUNCHED_BY_TAGS, LAYER_JOB_PREFIX, LAYER_TAG,
                                                 PROJECTIONS_JOB, TRIGGER_DAGSTER, TRIGGER_TAG)
from synix_resources.errors import SynixError
from synix_resources.llm.resource import LLMResource

# run_build's signature: build(paths, *, instance=, llm_config=, run_tags=, ...) -> BuildReport
BuildFn = Callable[..., Any]


def layer_job_name(layer: str, names: Names = MAIN_NAMES) -> str:
    """`synix_build_<layer>` on main, `<branch>__synix_build_<layer>` on another branch."""
    return names.qualify(f"{LAYER_JOB_PREFIX}{dagster_name(layer)}")


def _on(names: Names) -> str:
    return "" if names.is_main else f" of branch {names.branch}"


def layer_jobs(pipeline, names: Names = MAIN_NAMES) -> list:
    tags = {BRANCH_TAG: names.branch}
    jobs = [dg.define_asset_job(layer_job_name(layer, names), selection=[names.layer(layer)],
                                description=f"Build the {layer} layer{_on(names)} (the partitions "
                                            f"given, or the stale ones when `synix run` launches it).",
                                tags={LAYER_TAG: layer, **tags})
            for layer in pipeline.layer_order()]
    singles = [names.layer(l) for l in pipeline.layer_order() if partitions_for(pipeline, l, names) is None]
    if pipeline.projections:
        jobs.append(dg.define_asset_job(
            names.qualify(PROJECTIONS_JOB),
            selection=[*singles, *(names.layer(n) for n in pipeline.projections)],
            description=f"Refresh the search index and context document{_on(names)} (and the "
                        f"unpartitioned layers they read, when `synix run` selects them).",
            tags={LAYER_TAG: "projections", **tags}))
    return jobs


def run_links(instance, run_ids: list[str]) -> dict:
    """One metadata entry per run the build launched, `run <n>: <job>`, which the UI shows as a
    link to that run."""
    runs = {r.run_id: r for r in instance.get_runs(dg.RunsFilter(run_ids=run_ids))} if run_ids else {}
    return {f"run {i}: {runs[r].job_name if r in runs else 'run'}": dg.MetadataValue.dagster_run(r)
            for i, r in enumerate(run_ids, 1)}


def whole_build(context, llm: LLMResource, paths, names: Names, build: BuildFn, tags: dict | None = None):
    """The whole build (`synix run`'s own code) from inside a Dagster step: `synix_build_all`'s op,
    or the first step of a UI backfill of the whole memory (assets.py). Its layer runs carry this
    run's id, who launched it (the UI's "Launched by") and `tags`."""
    trigger = context.run.tags.get(TRIGGER_TAG, TRIGGER_DAGSTER)
    settings = {k: v for k, v in llm.model_dump().items()
                if k != "cache_path" and v not in ("", None, 0, 0.0, False)}
    launched_by = {k: v for k, v in context.run.tags.items() if k in LAUNCHED_BY_TAGS}
    try:
        return build(paths, instance=context.instance, llm_config=settings,
                     run_tags={**launched_by, **(tags or {}), TRIGGER_TAG: trigger,
                               BRANCH_TAG: names.branch, BUILD_RUN_TAG: context.run.run_id})
    except SynixError as e:  # `permanent`: the live sensor dead-letters instead of retrying
        raise dg.Failure(description=e.one_line(),
                         metadata={"permanent": bool(getattr(e, "permanent", False))}) from None


def build_all_job(paths, names: Names, build: BuildFn,
                  executor: dg.ExecutorDefinition | None = dg.in_process_executor) -> dg.JobDefinition:
    """`build`: the build itself (app/run.py's `run_build`), passed in by whoever compiles the
    definitions, so this floor never imports the application layer. `executor`: in process by
    default — the job is one op, and Dagster's default executor would start a second Python
    process for it (Dagster import and code location load again: ~3 s of every sensor-launched
    build); None keeps the definitions' executor (scale.toml's Celery)."""
    @dg.op(name=names.qualify(BUILD_MEMORY_OP), description="Plan with Synix's keys, then build every layer with work "
                                            "and refresh the projections: the same code as `synix run`.")
    def build_memory(context: dg.OpExecutionContext, llm: LLMResource):
        report = whole_build(context, llm, paths, names, build)
        summary = report.to_json()
        context.log.info(f"synix build: {summary['layers']} projections={summary['projections']}"
                         f" noop={report.noop} in {summary['seconds']}s")
        # the whole build's token usage and cost, under the names its layers' materializations
        # use (usage.py); an op's output is no asset, so Insights does not count it twice
        provider = report.provider.partition(":")[0]
        context.add_output_metadata({"noop": report.noop, "seconds": summary["seconds"],
                                     "llm_calls": summary["llm_calls"], "provider": summary["provider"],
                                     **totals_usage(provider, summary),
                                     "usage_by_layer": dg.MetadataValue.json(
                                         {layer: totals_usage(provider, totals)
                                          for layer, totals in report.layers.items()}),
                                     "layers": dg.MetadataValue.json(summary["layers"]),
                                     "dagster_runs": dg.MetadataValue.json(report.dagster_runs),
                                     **run_links(context.instance, report.dagster_runs)})
        return None

    @dg.job(name=names.qualify(BUILD_ALL), tags={BRANCH_TAG: names.branch, LAYER_TAG: "all"},
            executor_def=executor,
            description=f"Build the whole memory{_on(names)}: every stale partition of every "
                        f"layer, then the search index and context document (one Dagster run per "
                        f"layer with work).")
    def _job():
        build_memory()

    return _job
