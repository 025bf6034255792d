"""The Dagster shape of a pipeline: asset keys, edges and code versions, shared by the asset
definitions, the provenance tags and the store sync so all three agree.

Every branch of a project is its own asset graph in the same code location: main's assets keep
plain keys (`episodes`), another branch's live under `branches/<name>/…` in its own group, with
its own partition sets and job names (`Names`), so the graphs sit side by side without
collisions. Export folders are shared source assets when the branch reads them as main does."""
from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from synix_assets.dagster_defs.partitions import partitions_for
from synix_assets.dagster_defs.vocabulary import BRANCH_GROUP_PREFIX, QUALIFIER
from synix_assets.project import MAIN
from synix_resources.fingerprints import sha256_text

RESERVED = {"context", "conf", "config", "meta", "arg_dict", "dict", "input_arg_dict",
            "output_arg_dict", "int", "str", "float", "bool", "input", "output", "type"}


def dagster_name(name: str) -> str:
    """Synix names may contain '-'; Dagster names may not, nor be a reserved word."""
    clean = name.replace("-", "_")
    return f"synix_{clean}" if clean in RESERVED else clean


def branch_slug(branch: str) -> str:
    """A branch name as a Dagster name part (branch names may hold '-' and '.')."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in branch)


@dataclass(frozen=True)
class Names:
    """Where one branch's assets, partition sets, jobs and group are named (main: unprefixed).
    `own_sources`: sources this branch reads differently from main (another path or format),
    which therefore get branch-prefixed keys instead of main's shared ones."""

    branch: str = MAIN
    own_sources: frozenset[str] = frozenset()

    @property
    def is_main(self) -> bool:
        return self.branch == MAIN

    def prefix(self) -> list[str]:
        return [] if self.is_main else ["branches", branch_slug(self.branch)]

    def layer(self, layer: str) -> dg.AssetKey:
        return dg.AssetKey([*self.prefix(), dagster_name(layer)])

    def source(self, name: str) -> dg.AssetKey:
        own = self.prefix() if name in self.own_sources else []
        return dg.AssetKey([*own, "sources", name])

    def qualify(self, name: str) -> str:
        """A partition-set or job name of this branch."""
        return name if self.is_main else f"{branch_slug(self.branch)}{QUALIFIER}{name}"

    def group(self, group: str) -> str:
        return group if self.is_main else f"{BRANCH_GROUP_PREFIX}{branch_slug(self.branch)}"


MAIN_NAMES = Names()


def layer_key(layer: str, names: Names = MAIN_NAMES) -> dg.AssetKey:
    return names.layer(layer)


def source_key(name: str, names: Names = MAIN_NAMES) -> dg.AssetKey:
    return names.source(name)


@dataclass(frozen=True)
class Parent:
    """One Dagster edge into an asset. `kind`: source (an export folder), same (the upstream layer
    has the same partitions: partition P reads P), fan_in (a partitioned upstream read whole) or
    single (an unpartitioned upstream)."""

    name: str
    key: dg.AssetKey
    kind: str


def parents(pipeline, name: str, names: Names = MAIN_NAMES) -> list[Parent]:
    if name in pipeline.projections:
        proj = pipeline.projections[name]
        ups = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
        mine = None
    else:
        ups = pipeline.steps[name].from_
        mine = partitions_for(pipeline, name, names)
    out = []
    for up in ups:
        if up in pipeline.sources:
            out.append(Parent(up, names.source(up), "source"))
            continue
        part = partitions_for(pipeline, up, names)
        if part is None:
            kind = "single"
        elif mine is not None and part == mine:
            kind = "same"
        else:
            kind = "fan_in"
        out.append(Parent(up, names.layer(up), kind))
    return out


def code_versions(pipeline, llm_identity: str) -> dict[str, str]:
    """Code version of every layer and projection, folding in its upstream layers' versions: a
    prompt edit in episodes makes monthly, core and the projections stale in Dagster too, as
    `synix plan` says they are (Dagster itself does not pass staleness down the graph)."""
    out: dict[str, str] = {}
    for layer in pipeline.layer_order():
        step = pipeline.steps[layer]
        own = pipeline.version(layer, "" if step.kind == "merge" else llm_identity)
        ups = [out[u] for u in step.from_ if u in out]
        out[layer] = sha256_text("\n".join([own, *ups]))[:16]
    for name, proj in pipeline.projections.items():
        ups = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
        out[name] = sha256_text("\n".join([repr(proj), *(out[u] for u in ups if u in out)]))[:16]
    return out
