"""Dagster partitions of each layer: per conversation, per period, per topic, or none. Each
branch has its own dynamic partition sets (`Names.qualify`), so registering a branch's months
never adds partitions to main's graph."""
from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg

from synix_assets.dagster_defs.vocabulary import CONVERSATIONS, periods_name, topics_name

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
