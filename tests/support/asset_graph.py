"""What Dagster sees of a compiled project, as plain sorted JSON data (the asset-graph snapshot of
tests/dagster/test_asset_graph_snapshot.py, after dagster-open-platform's test_defs.py).

Everything is read through Dagster's public objects (Definitions, AssetSpec, AssetsDefinition,
JobDefinition, SensorDefinition) and normalised so the same project gives the same bytes in any
folder and any process: the project folder becomes `<project>`, sets become sorted lists, and
Dagster's own records (policies, conditions, mappings) go through `dagster.serialize_value`,
whose JSON has sorted keys. A value of a kind this module does not know fails loudly, so a new
field is added here on purpose rather than slipping into the snapshot as an unstable repr.
"""
from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path

import dagster as dg

PROJECT = "<project>"
PROJECTS = ("branch", "live", "monthly", "synapse", "topical")
BRANCH = "exp"


class Normaliser:
    """Turns Dagster values into JSON data with the project folder replaced by `<project>`."""

    def __init__(self, root: Path):
        # the resolved path first: a longer spelling must not be half-replaced by a shorter one
        self.roots = sorted({str(root), str(Path(root).resolve())}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for root in self.roots:
            value = value.replace(root, PROJECT)
        return value

    def plain(self, value):
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Path):
            return self.text(str(value))
        if isinstance(value, Enum):
            return self.plain(value.value)
        if isinstance(value, dg.MetadataValue):  # before tuple: some are records that refuse iteration
            return {"metadata_type": type(value).__name__, "value": self.plain(value.value)}
        if isinstance(value, dg.AssetKey):
            return value.to_user_string()
        if type(value) is dict:
            return {str(k): self.plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
        if type(value) in (list, tuple):  # not a NamedTuple record: those must be taught
            return [self.plain(v) for v in value]
        if isinstance(value, (set, frozenset)):
            return sorted((self.plain(v) for v in value), key=json.dumps)
        raise TypeError(f"the asset-graph snapshot does not know how to record a {type(value).__name__} "
                        f"({value!r}); teach tests/support/asset_graph.py.Normaliser.plain about it")

    def record(self, value):
        """A Dagster record (policy, automation condition, partition mapping) as its serdes JSON."""
        if value is None:
            return None
        return self.plain(json.loads(dg.serialize_value(value)))


def partitions(part: dg.PartitionsDefinition | None, norm: Normaliser):
    if part is None:
        return None
    kind = type(part).__name__
    if isinstance(part, dg.DynamicPartitionsDefinition):
        return {"class": kind, "name": part.name}
    if isinstance(part, dg.StaticPartitionsDefinition):
        return {"class": kind, "keys": list(part.get_partition_keys())}
    if isinstance(part, dg.TimeWindowPartitionsDefinition):
        return {"class": kind, "cron_schedule": part.cron_schedule, "timezone": part.timezone,
                "fmt": part.fmt, "start": part.start.isoformat(),
                "end": part.end.isoformat() if part.end else None, "end_offset": part.end_offset}
    if isinstance(part, dg.MultiPartitionsDefinition):
        return {"class": kind, "dimensions": {d.name: partitions(d.partitions_def, norm)
                                              for d in part.partitions_defs}}
    raise TypeError(f"the asset-graph snapshot does not know partitions of class {kind}; "
                    f"teach tests/support/asset_graph.partitions about it")


def _check(spec: dg.AssetCheckSpec, norm: Normaliser) -> dict:
    return {"name": spec.name, "asset": spec.asset_key.to_user_string(),
            "description": norm.plain(spec.description), "blocking": spec.blocking,
            "additional_deps": sorted(d.asset_key.to_user_string() for d in spec.additional_deps),
            "metadata": norm.plain(dict(spec.metadata)),
            "automation_condition": norm.record(spec.automation_condition),
            "partitions_def": partitions(spec.partitions_def, norm)}


def asset(defs: dg.Definitions, spec: dg.AssetSpec, norm: Normaliser) -> dict:
    assets_def = defs.resolve_assets_def(spec.key)
    # the mapping's serdes record names its class ("__class__") and its parameters
    deps = [{"asset": d.asset_key.to_user_string(), "partition_mapping": norm.record(d.partition_mapping)}
            for d in spec.deps]
    checks = [_check(c, norm) for c in assets_def.check_specs if c.asset_key == spec.key]
    return {
        "key": spec.key.to_user_string(),
        "deps": sorted(deps, key=lambda d: d["asset"]),
        "partitions_def": partitions(spec.partitions_def, norm),
        "code_version": spec.code_version,
        "group": spec.group_name,
        "kinds": sorted(spec.kinds or ()),
        "tags": norm.plain(dict(spec.tags)),
        "owners": list(spec.owners),
        "description": norm.plain(spec.description),
        "metadata": norm.plain(dict(spec.metadata)),
        "skippable": spec.skippable,
        "materializable": assets_def.is_materializable,
        "observable": assets_def.is_observable,
        "automation_condition": norm.record(spec.automation_condition),
        "freshness_policy": norm.record(spec.freshness_policy),
        "legacy_freshness_policy": norm.record(spec.legacy_freshness_policy),
        "backfill_policy": norm.record(assets_def.backfill_policy),
        "checks": sorted(checks, key=lambda c: c["name"]),
    }


def job(defs: dg.Definitions, resolved: dg.JobDefinition, norm: Normaliser) -> dict:
    declared = {j.name: j for j in defs.jobs or ()}.get(resolved.name)
    # an asset job's selection as declared (define_asset_job); an op job (synix_build_all) or
    # Dagster's implicit asset job is described by the ops it runs
    selection = None
    if isinstance(getattr(declared, "selection", None), dg.AssetSelection):
        keys = declared.selection.resolve(defs.resolve_asset_graph())
        selection = sorted(k.to_user_string() for k in keys)
    return {"name": resolved.name, "description": norm.plain(resolved.description),
            "assets": selection, "ops": sorted(resolved.graph.node_names()),
            "tags": norm.plain(dict(resolved.tags)), "run_tags": norm.plain(dict(resolved.run_tags)),
            "partitions_def": partitions(resolved.partitions_def, norm),
            "executor": resolved.executor_def.name}


def sensor(s: dg.SensorDefinition, norm: Normaliser) -> dict:
    return {"name": s.name, "minimum_interval_seconds": s.minimum_interval_seconds,
            "default_status": s.default_status.value, "description": norm.plain(s.description),
            "jobs": sorted(j.name for j in s.jobs) if s.has_jobs else [],
            "required_resource_keys": sorted(s.required_resource_keys)}


def schedule(s: dg.ScheduleDefinition, norm: Normaliser) -> dict:
    return {"name": s.name, "cron_schedule": norm.plain(s.cron_schedule),
            "execution_timezone": s.execution_timezone, "default_status": s.default_status.value,
            "job": s.job_name}


def describe(defs: dg.Definitions, root: Path, code_version_inputs: dict[str, dict]) -> dict:
    """The snapshot of `defs` compiled from the project in `root`. `code_version_inputs`: per
    asset key, what its code version is computed from (tests/dagster/test_asset_graph_snapshot.py)."""
    norm = Normaliser(root)
    repo = defs.get_repository_def()
    assets = []
    for spec in sorted(defs.resolve_all_asset_specs(), key=lambda s: s.key.to_user_string()):
        entry = asset(defs, spec, norm)
        entry["code_version_inputs"] = norm.plain(code_version_inputs.get(entry["key"]))
        assets.append(entry)
    # checks declared apart from their asset (dg.asset_check); an asset's own are under its entry
    standalone = [_check(spec, norm) for key, checks_def in repo.asset_checks_defs_by_key.items()
                  for spec in checks_def.check_specs if spec.key == key]
    return {
        "assets": assets,
        "standalone_checks": sorted(standalone, key=lambda c: (c["asset"], c["name"])),
        "jobs": [job(defs, j, norm) for j in sorted(repo.get_all_jobs(), key=lambda j: j.name)],
        "sensors": [sensor(s, norm) for s in sorted(repo.sensor_defs, key=lambda s: s.name)],
        "schedules": [schedule(s, norm) for s in sorted(repo.schedule_defs, key=lambda s: s.name)],
        "resources": {k: type(v).__name__ for k, v in sorted((defs.resources or {}).items())},
        "executor": defs.executor.name if defs.executor is not None else None,
    }


def dumps(snapshot: dict) -> str:
    return json.dumps(snapshot, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def make_project(kind: str, root: Path) -> Path:
    """One of PROJECTS, made as `synix init` makes it (with the demo exports): a template's
    project, or `branch`: the monthly project with a branch `exp` holding the topical pipeline."""
    from synix_assets.app.branches import create_branch
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project, template_file

    if kind not in PROJECTS:
        raise ValueError(f"unknown snapshot project {kind!r}: use one of {', '.join(PROJECTS)}")
    template = "monthly" if kind == "branch" else kind
    root = init_project(root, exports=demo_exports(), template=template)
    if kind == "branch":
        create_branch(ProjectPaths(root), BRANCH, pipeline_file=template_file("topical"))
    return root


def code_version_inputs(root: Path, identity: str) -> dict[str, dict]:
    """Per asset key, what dagster_defs.graph.code_versions hashes into its code version: a
    layer's step version inputs (Pipeline.version_inputs; merges without the LLM identity) or a
    projection's declaration, then the code versions of the layers it reads (`upstream`)."""
    from synix_assets.dagster_defs.compile import branch_graphs

    out = {}
    for graph in branch_graphs(root, identity):
        p, names = graph.pipeline, graph.names
        for layer in p.layer_order():
            step = p.steps[layer]
            out[names.layer(layer).to_user_string()] = {
                "step": p.version_inputs(layer, "" if step.kind == "merge" else identity),
                "upstream": [names.layer(u).to_user_string() for u in step.from_ if u in p.steps]}
        for name, proj in p.projections.items():
            ups = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
            out[names.layer(name).to_user_string()] = {
                "projection": repr(proj),
                "upstream": [names.layer(u).to_user_string() for u in ups if u in p.steps]}
    return out


def snapshot(root: Path) -> dict:
    """The snapshot of the project in `root`, compiled as its definitions.py does (without the
    store sync, so no Dagster instance is touched)."""
    from synix_assets.dagster_defs.build import build_defs
    from synix_assets.engine.llm_identity import llm_identity

    defs = build_defs(root, sync=False)
    return describe(defs, root, code_version_inputs(root, llm_identity()))


if __name__ == "__main__":  # python -m tests.support.asset_graph KIND FOLDER: print its snapshot
    sys.stdout.write(dumps(snapshot(make_project(sys.argv[1], Path(sys.argv[2])))))
