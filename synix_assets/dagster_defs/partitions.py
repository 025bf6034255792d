"""Dagster partitions of each layer: per conversation, per period, per topic, or none. Each
branch has its own dynamic partition sets (`Names.qualify`), so registering a branch's months
never adds partitions to main's graph."""
from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from synix_assets.dagster_defs.vocabulary import CONVERSATIONS, periods_name, topics_name
from synix_resources.store.partition_names import base_name

if TYPE_CHECKING:
    from synix_assets.dagster_defs.graph import Names

CONVERSATIONS_NAME = CONVERSATIONS


def _qualify(names: "Names | None", name: str) -> str:
    return names.qualify(name) if names is not None else name


def partitions_for(pipeline, layer: str, names: "Names | None" = None) -> dg.PartitionsDefinition | None:
    kind = pipeline.partitioning(layer)
    if kind == "conversation":
        return dg.DynamicPartitionsDefinition(name=_qualify(names, CONVERSATIONS_NAME))
    if kind == "period":
        return dg.DynamicPartitionsDefinition(name=_qualify(names, periods_name(layer)))
    if kind == "topic":
        topics = pipeline.steps[layer].config["topics"]
        if topics == "auto":
            return dg.DynamicPartitionsDefinition(name=_qualify(names, topics_name(layer)))
        return dg.StaticPartitionsDefinition(list(topics))
    return None


def dynamic_name(pipeline, layer: str, names: "Names | None" = None) -> str | None:
    """Name of the layer's dynamic partitions definition (None for static/unpartitioned)."""
    part = partitions_for(pipeline, layer, names)
    return part.name if isinstance(part, dg.DynamicPartitionsDefinition) else None


# --- readable conversation partitions --------------------------------------------------------
# The store keys a conversation by its export id; Dagster partitions it by the readable name the
# store assigned it (synix_resources/store/partition_names.py). These are the only two ways
# between the two: every key Synix gives Dagster goes through `partition_keys`, every key Dagster
# (or a person) gives Synix through `group_keys`.


def named(pipeline, layer: str) -> bool:
    """Whether the layer's partitions are conversations (the ones with readable names)."""
    return pipeline.partitioning(layer) == "conversation"


def _labels_from_store(store, pipeline, group_keys: list[str]) -> dict[str, str]:
    """Base names of built conversations: the title and date of their current artifact in the
    first conversation layer holding them."""
    out: dict[str, str] = {}
    for layer in pipeline.layer_order():
        left = [k for k in group_keys if k not in out]
        if not left or not named(pipeline, layer):
            continue
        current = store.current_index(layer, set(left))
        for art in store.get_many([current[k].artifact_id for k in left if k in current], outline=True):
            out[art.group_key] = base_name(art.metadata.get("meta.time.created_at"),
                                          art.metadata.get("meta.chat.title"))
    return out


def partition_names(store, pipeline, layer: str, group_keys, plan=None) -> dict[str, str]:
    """group key → Dagster partition key for `group_keys` of `layer`. A conversation seen for
    the first time is named now (from `plan`'s title and date when it is not built yet), and
    keeps that name from then on; other layers' group keys are their partition keys. One whose
    title is nowhere to be had yet (neither built nor in `plan`) is shown by its export id for
    now rather than named "untitled" for good: the sync moves it once it is named."""
    keys = list(dict.fromkeys(group_keys))
    if not named(pipeline, layer) or not keys:
        return {k: k for k in keys}
    names = store.partition_names(keys)
    missing = [k for k in keys if k not in names]
    if missing:
        wanted = _labels_from_store(store, pipeline, missing)
        titles = plan.titles if plan is not None else {}
        wanted.update({k: base_name(plan.dates.get(k), titles[k])
                       for k in missing if k not in wanted and k in titles})
        names.update(store.name_partitions(wanted))
    return {k: names.get(k, k) for k in keys}


def partition_keys(store, pipeline, layer: str, group_keys, plan=None) -> list[str]:
    """`group_keys` of `layer` as Dagster partition keys, in the same order."""
    keys = list(group_keys)
    names = partition_names(store, pipeline, layer, keys, plan)
    return [names[k] for k in keys]


def group_keys(store, pipeline, layer: str, keys) -> list[str]:
    """Dagster partition keys (or what a person typed) of `layer` as the store's group keys.
    A conversation's old key, its export id, is still accepted: scripts written before the
    readable names keep working."""
    keys = list(keys)
    if not named(pipeline, layer):
        return keys
    groups = store.partition_groups(keys)
    return [groups.get(k, k) for k in keys]
