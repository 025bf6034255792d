"""Runs executed in this process that Dagster's UI can list, link and re-execute.

`JobDefinition.execute_in_process` creates its run without a job origin: Dagster's UI then has
no code location to re-execute it from (`launchRunReexecution` failed with a raw CheckError on
`parent_run.remote_job_origin`), and the job page and the Overview timeline, which filter runs by
the `.dagster/repository` tag an origin brings, leave the run out. `execute_with_origin` does what
`execute_in_process` does (the same ephemeral in-process job, plan and executor, in this process:
a build's runs keep the speed, the work graph and Ctrl-C handling) but creates the run with the
origin of the job in the code location the webserver serves, so the UI re-executes it there.

Dagster exposes no public way to give an in-process run an origin, so this module (with
storage.py, which names Dagster's consolidated event log) is where Synix uses Dagster's
internals (tests/test_architecture.py allows exactly these two). Measured cost: the same as
`execute_in_process` (one plan, one run record), see docs/dagster.md.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from synix_assets.dagster_defs.vocabulary import LOCATION, REPOSITORY
from synix_assets.project.config import CODE_LOCATION, project_config


def repository_origin(project_root: Path, parent_run=None):
    """The code location a run of this project is re-executed in: the one that launched the
    parent run (a `synix_build_all` run started by the webserver or the sensor), else the
    location of the project's workspace.yaml (`synix` when it names none)."""
    from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteRepositoryOrigin

    if parent_run is not None and parent_run.remote_job_origin is not None:
        return parent_run.remote_job_origin.repository_origin
    return RemoteRepositoryOrigin(code_location_origin=RegisteredCodeLocationOrigin(
        location_name=workspace_location(project_root)), repository_name=REPOSITORY)


def workspace_location(project_root: Path) -> str:
    """The code location a project's assets are served from: the one its `.synix/config.toml`
    names (`code_location`, written by the Synix component of a `dg` project, whose location is
    that project's), else the first entry of the project's workspace.yaml."""
    configured = project_config(Path(project_root)).get(CODE_LOCATION)
    if isinstance(configured, str) and configured:
        return configured
    path = Path(project_root) / "workspace.yaml"
    try:
        entries = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("load_from") or []
    except (OSError, yaml.YAMLError, AttributeError):  # no (readable) workspace: Synix's default
        return LOCATION
    for entry in entries:
        for target in (entry or {}).values():
            if isinstance(target, dict) and target.get("location_name"):
                return str(target["location_name"])
    return LOCATION


def execute_with_origin(job_def, instance, repository, *, run_config: dict, tags: dict,
                        asset_selection=None):
    """Execute `job_def` in this process as `execute_in_process(raise_on_error=False)` does, in a
    run carrying `repository`'s origin for the job. Returns Dagster's execution result (success,
    run_id, all_events, get_asset_materialization_events)."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import create_execution_plan, execute_run
    from dagster._core.snap import snapshot_from_execution_plan

    selection = list(asset_selection or [])
    job = job_def.as_ephemeral_job(resource_defs={}, input_values={},
                                   asset_selection=selection or None)
    wrapped = InMemoryJob(job_def=job)
    plan = create_execution_plan(wrapped, run_config=run_config,
                                 instance_ref=instance.get_ref() if instance.is_persistent else None)
    # The run records the snapshot of the job as its code location declares it (its default
    # executor), not of the in-process copy: the UI compares the two before a re-execution and
    # would warn "the loaded version … may be different" for every run a build launched.
    shown = job_def.get_subset(asset_selection=frozenset(selection)) if selection else job_def
    run = instance.create_run(
        job_name=job_def.name, run_id=None, run_config=run_config, status=None,
        tags={**job.run_tags, **tags}, root_run_id=None, parent_run_id=None,
        step_keys_to_execute=plan.step_keys_to_execute,
        execution_plan_snapshot=snapshot_from_execution_plan(plan, shown.get_job_snapshot_id()),
        job_snapshot=shown.get_job_snapshot(), parent_job_snapshot=shown.get_parent_job_snapshot(),
        asset_selection=frozenset(selection) if selection else None, asset_check_selection=None,
        resolved_op_selection=None, op_selection=None,
        remote_job_origin=repository.get_job_origin(job_def.name), job_code_origin=None,
        asset_graph=job.asset_layer.asset_graph)
    return execute_run(wrapped, run, instance, raise_on_error=False)
