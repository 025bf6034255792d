"""A promote shown in Dagster: main's pointers that moved become `promote` materializations of
main's graph, so the UI agrees with the store after `synix branch promote`. Here, above the
compiler, because it compiles main's branch graph (dagster_defs.compile) and writes through
dagster_defs.records."""
from __future__ import annotations

from synix_assets.dagster_defs.compile import branch_graph
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.partitions import partition_keys
from synix_assets.dagster_defs.records import record_current, register_partitions
from synix_assets.engine.llm_identity import llm_identity


def record_promote(main, store, before: dict, after: dict) -> None:
    """Record main's pointers that a promote moved (`before` → `after`: (layer, group key) →
    artifact id) in the project's Dagster instance, as `promote` events of main's graph."""
    graph = branch_graph(main, llm_identity())
    moved: dict[str, list[str]] = {}
    for (layer, group_key), artifact_id in sorted(after.items()):
        if before.get((layer, group_key)) != artifact_id and layer in graph.pipeline.steps:
            moved.setdefault(layer, []).append(group_key)
    with dagster_instance(main) as instance:
        register_partitions(instance, graph.pipeline, {l: partition_keys(store, graph.pipeline, l, keys)
                                                       for l, keys in moved.items()}, graph.names)
        record_current(instance, graph.pipeline, store, graph.versions, graph.names, moved,
                       list(graph.pipeline.projections), "promote")
