"""Named jobs: one per layer (what `synix run` launches for a layer), one for the projections, and
`synix_build_all`, which builds the whole memory exactly as `synix run` does.

Dagster runs only assets that share one partitioning in a single run, so "build everything" is an
unpartitioned op that calls the runner — the same plan and the same per-layer jobs as `synix run`
— which launches one run per layer that has work. The export sensor launches this job; from the
command line it is `dagster job execute -j synix_build_all` (see docs/dagster.md).
"""

import dagster as dg

from synix_assets.dagster_defs.graph import dagster_name, layer_key
from synix_assets.dagster_defs.partitions import partitions_for
from synix_assets.dagster_defs.records import TRIGGER_TAG
from synix_resources.errors import SynixError
from synix_resources.llm.resource import LLMResource

BUILD_ALL = "synix_build_all"
PROJECTIONS_JOB = "synix_update_projections"
LAYER_TAG = "synix/layer"
BRANCH_TAG = "synix/branch"
BRANCH = "main"  # branches arrive later; every run is on main for now


def layer_job_name(layer: str) -> str:
    return f"synix_build_{dagster_name(layer)}"


def layer_jobs(pipeline) -> list:
    jobs = [dg.define_asset_job(layer_job_name(layer), selection=[layer_key(layer)],
                                description=f"Build the {layer} layer (the partitions given, or the "
                                            f"stale ones when `synix run` launches it).",
                                tags={LAYER_TAG: layer, BRANCH_TAG: BRANCH})
            for layer in pipeline.layer_order()]
    singles = [layer_key(l) for l in pipeline.layer_order() if partitions_for(pipeline, l) is None]
    if pipeline.projections:
        jobs.append(dg.define_asset_job(
            PROJECTIONS_JOB, selection=[*singles, *(layer_key(n) for n in pipeline.projections)],
            description="Refresh the search index and context document (and the unpartitioned "
                        "layers they read, when `synix run` selects them).",
            tags={LAYER_TAG: "projections", BRANCH_TAG: BRANCH}))
    return jobs


def build_all_job(paths) -> dg.JobDefinition:
    @dg.op(name="build_memory", description="Plan with Synix's keys, then build every layer with work "
                                            "and refresh the projections: the same code as `synix run`.")
    def build_memory(context: dg.OpExecutionContext, llm: LLMResource):
        from synix_assets.engine.runner import run_build

        trigger = context.run.tags.get(TRIGGER_TAG, "dagster")
        settings = {k: v for k, v in llm.model_dump().items()
                    if k != "cache_path" and v not in ("", None, 0, 0.0, False)}
        try:
            report = run_build(paths, instance=context.instance, llm_config=settings,
                               run_tags={TRIGGER_TAG: trigger, BRANCH_TAG: BRANCH})
        except SynixError as e:
            raise dg.Failure(description=e.one_line()) from None
        summary = report.to_json()
        context.log.info(f"synix build: {summary['layers']} projections={summary['projections']}"
                         f" noop={report.noop} in {summary['seconds']}s")
        context.add_output_metadata({"noop": report.noop, "seconds": summary["seconds"],
                                     "llm_calls": summary["llm_calls"], "provider": summary["provider"],
                                     "layers": dg.MetadataValue.json(summary["layers"]),
                                     "dagster_runs": dg.MetadataValue.json(report.dagster_runs)})
        return None

    @dg.job(name=BUILD_ALL, tags={BRANCH_TAG: BRANCH, LAYER_TAG: "all"},
            description="Build the whole memory: every stale partition of every layer, then the "
                        "search index and context document (one Dagster run per layer with work).")
    def _job():
        build_memory()

    return _job
