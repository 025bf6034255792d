"""What Dagster records about each partition, and keeping any Dagster instance in step with the
Synix store.

Provenance: every partition's materialization carries Dagster's data-version tags — its code
version, its data version (the artifact's content hash) and, per upstream asset, the upstream data
version and an event pointer (the upstream's latest storage id when the build started). Dagster's
stale/unsynced status is computed from exactly these tags, so with them it agrees with Synix's
plan instead of reporting "has a new dependency" on every partition.

Sync: a Dagster home that has never seen this project (plain `dagster dev` with a temporary home,
a new machine, a wiped instance) gets the project's partitions registered and one materialization
per current artifact recorded from the store (tagged `synix/trigger=store_sync`), so the UI shows
the real state instead of "Never materialized". Assets no longer in the pipeline are wiped from
the instance so a pipeline change leaves no orphans.
"""
from __future__ import annotations

import dagster as dg

from synix_assets.dagster_defs.checks import check_evaluation
from synix_assets.dagster_defs.graph import MAIN_NAMES, Names, Parent, parents
from synix_assets.dagster_defs.partitions import (dynamic_name, named, partition_keys, partition_names,
                                                 partitions_for)
from synix_assets.dagster_defs.vocabulary import TRIGGER_STORE_SYNC, TRIGGER_TAG
from synix_assets.engine.projections import artifact_title

DATA_VERSION_TAG = "dagster/data_version"
INITIAL = "INITIAL"  # Dagster's data version of an external asset observed without one


def data_version(content_hash: str | None) -> str:
    return (content_hash or "")[:16] or INITIAL


def latest_storage_ids(instance, keys: list[dg.AssetKey], sources: set[dg.AssetKey]) -> dict:
    """The newest event id of each asset (observations for export sources): the cursor Dagster
    compares later materializations of a partitioned upstream against."""
    out = {}
    for key in keys:
        flt = dg.AssetRecordsFilter(asset_key=key)
        fetch = instance.fetch_observations if key in sources else instance.fetch_materializations
        records = fetch(flt, limit=1).records
        out[key] = records[0].storage_id if records else None
    return out


def _single_hash(store, layer: str) -> str | None:
    current = store.current_index(layer)
    return next(iter(current.values())).content_hash if len(current) == 1 else None


class Provenance:
    """Builds the provenance tags of one asset's materializations for one build."""

    def __init__(self, pipeline, store, name: str, code_version: str, instance,
                 names: Names = MAIN_NAMES):
        self.store, self.code_version = store, code_version
        self.parents: list[Parent] = parents(pipeline, name, names)
        sources = {p.key for p in self.parents if p.kind == "source"}
        self.cursors = latest_storage_ids(instance, [p.key for p in self.parents], sources)
        self._single = {p.name: _single_hash(store, p.name) for p in self.parents if p.kind == "single"}

    def tags(self, group_key: str | None, content_hash: str | None,
             outdated: bool = False) -> dict[str, str]:
        """`outdated`: the artifact is what the store holds but not what this code version would
        build (Synix's plan would rebuild it), so Dagster must show it stale."""
        code = f"{self.code_version}-outdated" if outdated else self.code_version
        tags = {"dagster/code_version": code,
                "dagster/data_version": data_version(content_hash),
                "dagster/data_version_is_user_provided": "true"}
        for p in self.parents:
            cursor = self.cursors.get(p.key)
            if p.kind == "same" and group_key is not None:
                up = self.store.current(p.name, group_key)
                version = data_version(up.content_hash if up else None)
            elif p.kind == "single":
                version = data_version(self._single.get(p.name))
            elif p.kind == "fan_in":
                # Dagster compares a partitioned upstream by event pointer, not by this value.
                version = f"events<={cursor}"
            else:
                version = INITIAL  # export folders are observed without a data version
            name = p.key.to_user_string()
            tags[f"dagster/input_data_version/{name}"] = version
            tags[f"dagster/input_event_pointer/{name}"] = str(cursor) if cursor else "NULL"
        return tags


def artifact_metadata(art) -> dict:
    """What a person recognises a partition by: its title, date and a preview of its content."""
    md = {"artifact_id": art.artifact_id, "title": artifact_title(art),
          "date": str(art.metadata.get("meta.time.created_at") or art.metadata.get("meta.time.period") or "")[:10],
          "preview": dg.MetadataValue.md(art.content[:600])}
    if art.metadata.get("meta.chat.message_count"):
        md["messages"] = int(art.metadata["meta.chat.message_count"])
    return md


def register_partitions(instance, pipeline, layer_keys: dict[str, list[str]],
                        names: Names = MAIN_NAMES) -> int:
    """Add the given partition keys (`partitions.partition_keys`) to each layer's dynamic
    partitions; returns how many were new."""
    # layers sharing a partitions definition (transcripts and episodes: the conversations) are
    # looked up once: every sensor tick reads each definition's whole key list
    wanted: dict[str, list[str]] = {}
    for layer, keys in layer_keys.items():
        name = dynamic_name(pipeline, layer, names)
        if name and keys:
            wanted.setdefault(name, []).extend(keys)
    added = 0
    for name, keys in wanted.items():
        have = set(instance.get_dynamic_partitions(name))
        # sorted: a conversation's key starts with its date, so the UI lists them in date order
        new = sorted(set(keys) - have)
        if new:
            instance.add_dynamic_partitions(name, new)
            added += len(new)
    return added


def wipe_orphans(instance, asset_keys: set[dg.AssetKey]) -> list[dg.AssetKey]:
    """Wipe assets no branch's pipeline defines any more (a removed layer, a deleted branch)."""
    wiped = [k for k in instance.get_asset_keys() if k not in asset_keys]
    if wiped:
        instance.wipe_assets(wiped)
    return wiped


def record_current(instance, pipeline, store, versions: dict[str, str], names: Names,
                   layers: dict[str, list[str]], projections: list[str], trigger: str,
                   outdated: dict[str, set[str]] | None = None) -> int:
    """Record one runless materialization per given current artifact (layer → group keys) and
    projection, with full provenance tags: Dagster then shows what the store holds, e.g. after
    a promote moved main's pointers without a build. `outdated`: per layer, the partitions
    Synix's plan would rebuild (recorded as stale). Returns how many were recorded."""
    outdated = outdated or {}
    recorded = 0
    for layer, group_keys in layers.items():
        if not group_keys:
            continue
        prov = Provenance(pipeline, store, layer, versions[layer], instance, names)
        partitioned = partitions_for(pipeline, layer, names) is not None
        current = store.current_index(layer)
        ids = [current[g].artifact_id for g in group_keys if g in current]
        shown = partition_names(store, pipeline, layer, group_keys) if partitioned else {}
        for art in store.get_many(ids):
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=names.layer(layer), partition=shown.get(art.group_key),
                metadata={**artifact_metadata(art), "note": "recorded from the Synix store"},
                tags={**prov.tags(art.group_key if partitioned else None, art.content_hash,
                                  outdated=art.group_key in outdated.get(layer, ())),
                      TRIGGER_TAG: trigger}))
            recorded += 1
    for name in projections:
        key = store.get_meta(f"projection:{name}:key")
        if key:
            prov = Provenance(pipeline, store, name, versions[name], instance, names)
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=names.layer(name), metadata={"note": "recorded from the Synix store"},
                tags={**prov.tags(None, key), TRIGGER_TAG: trigger}))
            recorded += 1
    return recorded


def rerecorded_note(synced: dict, branch: str) -> str | None:
    """What a sync that recorded materializations for assets with no Dagster record says (e.g.
    after `dagster asset wipe`: the store still holds what was built and Dagster must show it),
    rather than undoing the wipe silently; None when it recorded none of those."""
    if synced["partitions_renamed"] or not synced["materializations_recorded"]:
        return None
    return (f"{', '.join(synced['assets_recorded'])} ({branch}) had no Dagster record (wiped?): "
            f"recorded {synced['materializations_recorded']} materialization(s) from the Synix "
            f"store, which still holds them; to rebuild instead, run `synix run --full` (or purge "
            f"what should go)")


def sync_instance(instance, pipeline, store, versions: dict[str, str], names: Names = MAIN_NAMES,
                  paths=None, building_run: str | None = None) -> dict:
    """Bring `instance` in step with one branch's pointers in the store (see the module
    docstring); cheap when it already is. `store` reads that branch; with `paths` (the
    branch's), what Synix's plan would rebuild is recorded as stale — a new branch whose
    episode prompt changed shows its inherited episodes stale, exactly as `synix plan` does.
    `building_run`: the Synix run storing artifacts in this process meanwhile (its work graph
    starts before Dagster loads); what it stores is left to its own Dagster runs to record."""
    layers = pipeline.layer_order()
    current = {layer: store.current_index(layer) for layer in layers}
    added = register_partitions(instance, pipeline, {l: partition_keys(store, pipeline, l, sorted(current[l]))
                                                     for l in layers}, names)
    renamed = export_id_partitions(instance, pipeline, store, names)
    unrecorded = {l: sorted(current[l]) for l in layers if current[l] and (
        renamed or instance.get_latest_materialization_event(names.layer(l)) is None)}
    if unrecorded and building_run:
        # read after `current`: every artifact of the run that `current` holds is listed
        mine = store.keys_built_in_run(building_run)
        unrecorded = {l: kept for l, keys in unrecorded.items()
                      if (kept := [k for k in keys if k not in mine.get(l, ())])}
    projections = [n for n in pipeline.projections
                   if renamed or instance.get_latest_materialization_event(names.layer(n)) is None]
    outdated: dict[str, set[str]] = {}
    checks: list[dg.AssetCheckEvaluation] = []
    if paths is not None and (unrecorded or projections):
        outdated, fresh, checks = _synix_plan(pipeline, store, paths, projections, list(unrecorded), names)
        projections = [n for n in projections if n in fresh]
    recorded = record_current(instance, pipeline, store, versions, names, unrecorded, projections,
                              TRIGGER_STORE_SYNC, outdated)
    # Recorded after the materializations, runless like them: Dagster counts a check evaluation
    # for the asset's latest materialization when both come from the same run (here: none), so
    # the `synix_up_to_date` check of a layer recorded again (after `dagster asset wipe`) shows
    # Synix's verdict instead of "Not evaluated".
    for evaluation in checks:
        instance.report_runless_asset_event(evaluation)
    for set_name, keys in renamed.items():  # recorded under their names: the old keys can go
        for key in keys:
            instance.delete_dynamic_partition(set_name, key)
    return {"partitions_renamed": sum(len(k) for k in renamed.values()),"partitions_added": added, "materializations_recorded": recorded,
            "assets_recorded": sorted([*unrecorded, *projections])}


def export_id_partitions(instance, pipeline, store, names: Names = MAIN_NAMES) -> dict[str, list[str]]:
    """Conversation partitions an instance still holds under the conversation's export id (the
    key before readable names), per dynamic partition set. `sync_instance` migrates them: it
    records what the store holds under the readable names (every layer, so nothing downstream
    looks behind its inputs) and then removes the old keys, so nothing shows Missing or rebuilds."""
    sets = {dynamic_name(pipeline, l, names) for l in pipeline.layer_order() if named(pipeline, l)}
    out: dict[str, list[str]] = {}
    for set_name in sorted(s for s in sets if s):
        have = instance.get_dynamic_partitions(set_name)
        shown = store.partition_names(have)
        old = [k for k in have if shown.get(k, k) != k and k not in shown.values()]
        if old:
            out[set_name] = old
    return out


def record_lost(instance, pipeline, store, versions: dict[str, str], names: Names,
                built: dict[str, set[str]]) -> int:
    """Record the artifacts a killed Synix run stored (`built`: layer → group keys) whose
    materialization Dagster's log lacks: a process killed between Synix's commit and Dagster's
    write of the event (Synix's event log storage writes a step's materializations up to 0.25 s
    later, in batches). Compared by data version, so a partition rebuilt by that run and still
    holding its earlier record is recorded too. Returns how many were recorded."""
    lost: dict[str, list[str]] = {}
    for layer, keys in built.items():
        if layer not in pipeline.steps:
            continue
        current = store.current_index(layer)
        keys = sorted(k for k in keys if k in current)
        if not keys:
            continue
        key = names.layer(layer)
        if partitions_for(pipeline, layer, names) is None:
            event = instance.get_latest_materialization_event(key)
            tags = (event.asset_materialization.tags or {}) if event and event.asset_materialization else {}
            recorded = {keys[0]: tags} if tags else {}
        else:
            # Dagster knows a conversation's partition by its readable name, the store by its id
            shown = partition_names(store, pipeline, layer, keys)
            by_name = instance.event_log_storage.get_latest_tags_by_partition(
                key, dg.DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG],
                asset_partitions=[shown[k] for k in keys])
            recorded = {k: by_name.get(shown[k]) for k in keys}
        missing = [k for k in keys if (recorded.get(k) or {}).get(DATA_VERSION_TAG)
                   != data_version(current[k].content_hash)]
        if missing:
            lost[layer] = missing
    return record_current(instance, pipeline, store, versions, names, lost, [], TRIGGER_STORE_SYNC)


def _synix_plan(pipeline, store, paths, projections: list[str], checked: list[str],
                names: Names) -> tuple[dict[str, set[str]], set[str], list[dg.AssetCheckEvaluation]]:
    """(per layer the partitions Synix would rebuild, the projections that are current, the
    `synix_up_to_date` check of each layer of `checked`)."""
    from synix_assets.engine.context import BuildContext
    from synix_assets.engine.layers import plan_all
    from synix_assets.engine.projections import output_path, projection_stale
    from synix_resources.llm.factory import quiet_client

    # The client a build would use, built without needing its key: a plan sends nothing.
    ctx = BuildContext(pipeline, store, quiet_client(replay=True), paths)
    try:
        plans = plan_all(ctx, ctx.reader.scan())
        # a missing file is stale without computing its key (a pass over every artifact)
        fresh = {n for n in projections if output_path(ctx, n).exists() and not projection_stale(ctx, n)}
    finally:
        ctx.llm.close()
    checks = [check_evaluation(ctx, layer, names.layer(layer), plans[layer]) for layer in checked]
    return {layer: set(plan.stale_keys) for layer, plan in plans.items()}, fresh, checks
