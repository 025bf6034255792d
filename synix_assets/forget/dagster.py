"""The Dagster side of `synix forget`: the runs and events that name the forgotten artifacts or
carry their text, the conversations' dynamic partitions, and the materializations of the layers
whose asset index was wiped (restored so the UI still shows the surviving partitions built).
Dagster itself is imported only where an instance is opened."""
from __future__ import annotations

import json

from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.vocabulary import STATUS_KEY
from synix_assets.project import ProjectPaths
from synix_resources.folders import remove_inside
from synix_resources.store.artifact_store import ArtifactStore

# Dagster files events reported outside any run (`report_runless_asset_event`) under this run
# id; `instance.delete_run` of it deletes them (there is no public constant for it).
RUNLESS_RUN_ID = ""


def has_dagster(paths: ProjectPaths) -> bool:
    return (paths.dagster_home / "history").exists()


def dagster_runs_mentioning(paths: ProjectPaths, journal: dict) -> list[str]:
    """Dagster runs whose events name a forgotten artifact or contain its text (previews);
    RUNLESS_RUN_ID stands for the events reported outside any run (restored materializations)."""
    ids = [a["id"] for a in journal["artifacts"]]
    texts = [*journal["match_texts"], *journal["verify_texts"]]
    if not ids or not has_dagster(paths):
        return []
    import dagster as dg

    with dagster_instance(paths) as instance:
        escaped = [json.dumps(t)[1:-1] for t in texts]
        hits = []
        for run_id in [run.run_id for run in instance.get_runs()] + [RUNLESS_RUN_ID]:
            text = "\n".join(dg.serialize_value(e) for e in instance.all_logs(run_id))
            if any(i in text for i in ids) or any(t in text for t in escaped):
                hits.append(run_id)
        return hits


def _phase_dagster(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    """Delete the runs, the conversations' dynamic partitions, and wipe the asset index of the
    affected layers (it caches each asset's last materialization, preview included)."""
    if not has_dagster(paths):
        return {"wiped_layers": []}
    with dagster_instance(paths) as instance:
        run_ids = sorted(set(journal["dagster_runs"]) |
                         set(dagster_runs_mentioning(paths, journal)))
        for run_id in run_ids:
            if run_id == RUNLESS_RUN_ID:
                instance.delete_run(run_id)  # every event reported outside a run
                continue
            if instance.get_run_by_id(run_id) is not None:
                instance.delete_run(run_id)  # the run record and all its events
            for suffix in (".db", ".db-wal", ".db-shm"):
                shard = paths.dagster_home / "history" / "runs" / f"{run_id}{suffix}"
                shard.unlink(missing_ok=True)
            remove_inside(paths.dagster_home / "storage" / run_id, paths.dagster_home / "storage",
                          ignore_errors=True)
        graphs = _dagster_graphs(paths)
        arts = [a for a in journal["artifacts"] if any(a["layer"] in g.pipeline.steps for g in graphs)]
        for name, key in _partitions_named(graphs, arts, journal.get("partition_names", {})):
            if instance.has_dynamic_partition(name, key):
                instance.delete_dynamic_partition(name, key)
        layers = sorted({a["layer"] for a in arts})
        # runless events were restored materializations of any layer: restore them all again
        restore = set(pipeline.steps) if RUNLESS_RUN_ID in run_ids else set(layers)
        wiped = sorted(set(journal.get("results", {}).get("wiped_layers", [])) |
                       (restore if run_ids else set()))
        if run_ids and layers:  # on every branch's graph that has the layer
            instance.wipe_assets([g.names.layer(l) for g in graphs for l in layers if l in g.pipeline.steps])
        return {"wiped_layers": wiped, "dagster_runs": run_ids}


def _dagster_graphs(paths: ProjectPaths) -> list:
    """Every branch's Dagster graph (main first): a forgotten conversation leaves all of them."""
    from synix_assets.dagster_defs.compile import branch_graphs
    from synix_assets.engine.llm_identity import llm_identity

    return branch_graphs(paths.root, llm_identity())


def _partitions_named(graphs, arts: list[dict], shown: dict[str, str], *,
                      conversations_only: bool = False) -> list[tuple[str, str]]:
    """(dynamic partition set, key) of each artifact on every branch graph declaring its layer
    (`conversations_only`: only partitions named after a conversation, not months or topics).
    `shown`: the conversations' readable partition keys (the journal's); their export ids are
    listed too, for an instance not migrated to the readable keys yet."""
    from synix_assets.dagster_defs.partitions import dynamic_name, named

    found = {(dynamic_name(g.pipeline, a["layer"], g.names), key)
             for g in graphs for a in arts if a["layer"] in g.pipeline.steps
             and (not conversations_only or named(g.pipeline, a["layer"]))
             for key in {a["group_key"], shown.get(a["group_key"], a["group_key"])}}
    return sorted((n, k) for n, k in found if n)


def _phase_restore(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    """Record (without previews) the surviving partitions of wiped assets, so the Dagster UI
    still shows them materialized; the rebuild that follows records what it builds."""
    layers = journal.get("results", {}).get("wiped_layers", [])
    if not layers:
        return {}
    import dagster as dg

    from synix_assets.dagster_defs.partitions import partition_names, partitions_for

    with dagster_instance(paths) as instance:
        store = ArtifactStore(paths.store)
        try:
            for graph, layer in [(g, l) for g in _dagster_graphs(paths) for l in layers
                                 if l in g.pipeline.steps]:
                key = graph.names.layer(layer)
                partitioned = partitions_for(graph.pipeline, layer, graph.names) is not None
                done = instance.get_materialized_partitions(key) if partitioned else set()
                if not partitioned and instance.get_latest_materialization_event(key) is not None:
                    continue
                branch_store = store.on_branch(graph.names.branch)
                current = branch_store.current_index(layer)
                shown = partition_names(branch_store, graph.pipeline, layer, current) if partitioned else {}
                for art in branch_store.get_many(ref.artifact_id for ref in current.values()):
                    if partitioned and shown[art.group_key] in done:
                        continue
                    instance.report_runless_asset_event(dg.AssetMaterialization(
                        asset_key=key, partition=shown.get(art.group_key),
                        metadata={"artifact_id": art.artifact_id, STATUS_KEY: "restored after forget"}))
        finally:
            store.close()
        return {}


def leftover_partitions(paths: ProjectPaths, pipeline, journal: dict) -> list[tuple[str, str]]:
    """Dagster partitions still named after a forgotten conversation."""
    if not has_dagster(paths):
        return []
    with dagster_instance(paths) as instance:
        named = _partitions_named(_dagster_graphs(paths), journal["artifacts"],
                                  journal.get("partition_names", {}), conversations_only=True)
        return [(n, k) for n, k in named if instance.has_dynamic_partition(n, k)]
