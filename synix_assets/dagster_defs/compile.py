"""Compile a project's pipeline.py into Dagster definitions.

`compile_defs(project_dir, build=...)` gives, for main and for every branch side by side
(graph.Names), one asset per layer and projection (each emitting its `synix_up_to_date` check),
the named jobs, the export folders as observed external assets, one export sensor feeding every
branch (running by default) and the resources. `build` is the whole build (app/run.py's
`run_build`), which the `synix_build_all` jobs call; it is passed in because the application
layer sits above this one. A project's own `definitions.py` (written by `synix init`) calls the
entry `build.build_defs`, which passes it; `synix run` compiles in process with it. When the
process has a Dagster home (DAGSTER_HOME, which a project's `.env` sets for every `dagster`
command run in it), loading the definitions also syncs that instance with the store
(records.sync_instance).
"""
from __future__ import annotations

import contextlib

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from synix_assets.dagster_defs import storage
from synix_assets.dagster_defs.api_sensor import api_sensors
from synix_assets.dagster_defs.automation import automation_sensors
from synix_assets.dagster_defs.assets import layer_asset, projection_asset, source_specs
from synix_assets.dagster_defs.executor import executor_for, sensor_running
from synix_assets.dagster_defs.graph import Names, code_versions
from synix_assets.dagster_defs.jobs import BuildFn, build_all_job, layer_jobs
from synix_assets.dagster_defs.live_sensor import live_sensors
from synix_assets.dagster_defs.llm_config import launchpad_llm
from synix_assets.dagster_defs.records import rerecorded_note, sync_instance, wipe_orphans
from synix_assets.dagster_defs.schedule import synthesis_schedule
from synix_assets.dagster_defs.sensors import export_sensor
from synix_assets.engine.llm_identity import llm_identity
from synix_assets.engine.schedule import WorkGraph
from synix_assets.project import MAIN, ProjectPaths
from synix_assets.project.branches import branch_names
from synix_resources.errors import SynixError
from synix_resources.field_crypto import VAR as FIELD_KEY_VAR
from synix_resources.llm.resource import LLMResource
from synix_resources.settings import settings
from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.resource import ArtifactStoreResource


def resources_for(paths: ProjectPaths, identity: str | None = None) -> dict:
    """The store and LLM resources; the LLM resource names the provider a build will really use
    (resolved from the environment now), so the UI does not show an empty provider."""
    provider = (identity or llm_identity()).split(":", 1)[0]
    # the field key reaches the resource as an EnvVar: Dagster resolves it in each run process
    # and never shows or stores the key itself
    key = {"field_key": dg.EnvVar(FIELD_KEY_VAR)} if settings().field_key else {}
    return {"store": ArtifactStoreResource(path=str(paths.store), **key),
            "llm": LLMResource(cache_path=str(paths.llm_cache), provider=provider)}


def _launchpad_resources(paths: ProjectPaths, identity: str) -> dict:
    """The resources of definitions a person launches runs of (the UI, `dagster`, `dg`): the
    LLM's provider and model are not run config there (llm_config.py)."""
    resources = resources_for(paths, identity)
    return {**resources, "llm": launchpad_llm(resources["llm"], identity)}


@dataclass(frozen=True)
class BranchGraph:
    """One branch's pipeline as Dagster sees it: its paths, its names and its code versions."""

    paths: ProjectPaths
    pipeline: object
    names: Names
    versions: dict[str, str]

    def asset_keys(self) -> set[dg.AssetKey]:
        p, n = self.pipeline, self.names
        return {*(n.source(s) for s in p.sources), *(n.layer(l) for l in p.steps),
                *(n.layer(x) for x in p.projections)}


def _source_spec(src) -> tuple:
    return (src.format, str(src.path))


def branch_graph(paths: ProjectPaths, identity: str, main=None) -> BranchGraph:
    """The graph of `paths.branch` (`main`: main's pipeline, when already loaded)."""
    if paths.branch == MAIN:
        pipeline = main or paths.load_pipeline()
        return BranchGraph(paths, pipeline, Names(), code_versions(pipeline, identity))
    pipeline = paths.load_pipeline()
    main = main or ProjectPaths(paths.root).load_pipeline()
    own = frozenset(s for s, src in pipeline.sources.items()
                    if s not in main.sources or _source_spec(main.sources[s]) != _source_spec(src))
    return BranchGraph(paths, pipeline, Names(paths.branch, own), code_versions(pipeline, identity))


def branch_graphs(root: Path, identity: str, only: list[str] | None = None) -> list[BranchGraph]:
    """Main's graph and every other branch's (`only`: just these branches). A branch whose
    pipeline does not load is left out with a warning, so one broken experiment never hides
    main's assets; `synix run --branch` on it reports the pipeline error itself."""
    main_paths = ProjectPaths(root)
    main = main_paths.load_pipeline()
    graphs = []
    for branch in branch_names(main_paths, snapshots=False) if only is None else only:
        try:
            graphs.append(branch_graph(main_paths.on_branch(branch), identity, main))
        except SynixError as exc:
            warnings.warn(f"branch {branch!r} left out of the Dagster definitions: {exc.one_line()}")
    return graphs


def compile_defs(project_dir: str | Path, *, build: BuildFn, resources: dict | None = None,
                 sync: bool = True, branches: list[str] | None = None,
                 building_run: str | None = None, work: WorkGraph | None = None,
                 instance: dg.DagsterInstance | None = None) -> dg.Definitions:
    """`branches`: only these branches' graphs (`synix run --branch` builds one); default every
    branch of the project, side by side. `building_run`: a Synix run of this process storing
    artifacts meanwhile, which the sync leaves to that run (records.sync_instance). `work`: that
    run's work graph (engine/schedule.py), whose results its layer steps record. `instance`: the
    caller's open instance of the project's Dagster home, synced instead of opening another
    (opening one checks its schema against every Dagster migration: 0.2 s)."""
    # Single-run backfills (one run per layer, not per partition) are a Dagster beta parameter;
    # the warning would print at every start of every Dagster process, so it is silenced here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        defs = _compile_defs(project_dir, build=build, resources=resources, sync=sync,
                             only=branches, building_run=building_run, work=work, instance=instance)
        defs.get_repository_def()  # resolve now: binding resources copies the sensor, which warns too
        return defs


def _assets(graph: BranchGraph, identity: str, shared_sources: set[dg.AssetKey],
            work: WorkGraph | None, build: BuildFn) -> list:
    p, paths, names, versions = graph.pipeline, graph.paths, graph.names, graph.versions
    return [*(spec for spec in source_specs(p, names) if spec.key not in shared_sources),
            *(layer_asset(p, paths, layer, versions, identity, names, work, build) for layer in p.layer_order()),
            *(projection_asset(p, paths, name, versions, names) for name in p.projections)]


def _compile_defs(project_dir, *, build, resources, sync, only, building_run, work,
                  instance=None) -> dg.Definitions:
    root = Path(project_dir).resolve()
    identity = llm_identity()
    graphs = branch_graphs(root, identity, only)
    assets, jobs, build_jobs, seen_sources = [], [], {}, set()
    executor = executor_for(root)
    for graph in graphs:
        assets += _assets(graph, identity, seen_sources, work, build)
        seen_sources |= {graph.names.source(s) for s in graph.pipeline.sources}
        build_jobs[graph.names.branch] = build_all_job(graph.paths, graph.names, build,
                                                      None if executor else dg.in_process_executor)
        jobs += [build_jobs[graph.names.branch], *layer_jobs(graph.pipeline, graph.names)]
    keys = set().union(*(g.asset_keys() for g in graphs))
    main_paths = ProjectPaths(root)
    # live sessions feed main (a tenant's memory); branches read them through main's store
    live = [*live_sensors(graphs[0].pipeline, graphs[0].paths, build_jobs[MAIN])] \
        if graphs and graphs[0].names.is_main else []
    # the synthesis loop every 15 minutes (design 003), main's: the evidence is the project's
    schedules = [synthesis_schedule(graphs[0].paths, graphs[0].pipeline, build_jobs[MAIN])] \
        if graphs and graphs[0].names.is_main else []
    defs = dg.Definitions(assets=assets, jobs=jobs, schedules=schedules,
                          sensors=[export_sensor(graphs, build_jobs, keys, whole=only is None,
                                                 running=sensor_running(root)), *live,
                                   *api_sensors(graphs, running=sensor_running(root)),
                                   *(s for g in graphs for s in automation_sensors(
                                       sorted(g.asset_keys() - {g.names.source(x) for x in g.pipeline.sources},
                                              key=lambda k: k.to_user_string()), g.names))],
                          resources=resources or _launchpad_resources(main_paths, identity),
                          executor=executor)
    home = settings().dagster_home
    if home and Path(home).is_dir():
        storage.tune(Path(home))  # run workers and the UI write events here too
        if sync and main_paths.has_store():
            with contextlib.ExitStack() as opened:
                if instance is None:
                    instance = opened.enter_context(dg.DagsterInstance.get())
                store = opened.enter_context(ArtifactStore(main_paths.store))
                for graph in graphs:
                    synced = sync_instance(instance, graph.pipeline, store.on_branch(graph.names.branch),
                                           graph.versions, graph.names, graph.paths, building_run)
                    if note := rerecorded_note(synced, graph.names.branch):
                        # a process loading the definitions (a run worker, the code server)
                        # can come before the sensor's tick: it says so too
                        logging.getLogger("synix.dagster").warning(note)
                if only is None:
                    wipe_orphans(instance, keys)
    return defs
