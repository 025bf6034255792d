"""Dagster partitions of each layer: per conversation, per period, per topic, or none."""
from __future__ import annotations

import dagster as dg

CONVERSATIONS = dg.DynamicPartitionsDefinition(name="conversations")


def periods_name(layer: str) -> str:
    return f"{layer}_periods"


def topics_name(layer: str) -> str:
    return f"{layer}_topics"


def partitions_for(pipeline, layer: str) -> dg.PartitionsDefinition | None:
    kind = pipeline.partitioning(layer)
    if kind == "conversation":
        return CONVERSATIONS
    if kind == "period":
        return dg.DynamicPartitionsDefinition(name=periods_name(layer))
    if kind == "topic":
        topics = pipeline.steps[layer].config["topics"]
        if topics == "auto":
            return dg.DynamicPartitionsDefinition(name=topics_name(layer))
        return dg.StaticPartitionsDefinition(list(topics))
    return None


def dynamic_name(pipeline, layer: str) -> str | None:
    """Name of the layer's dynamic partitions definition (None for static/unpartitioned)."""
    part = partitions_for(pipeline, layer)
    return part.name if isinstance(part, dg.DynamicPartitionsDefinition) else None
