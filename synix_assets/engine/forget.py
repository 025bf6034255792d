"""`synix forget`: remove a conversation (or a whole export file) and everything built from it.

A journaled operation, under the project's build lock:

plan     resolve the target to conversation ids, the export files holding them (links and files
         outside the project are never written through), every artifact derived from them
         through provenance (superseded versions included), their fold checkpoints past the
         forgotten item, Dagster runs and partitions naming them and the LLM-cache entries whose
         input derived from them; write all of it to `.synix/forget.journal.json` (fsynced)
         before anything is deleted.
phases   store, index, cache, dagster, exports, internal, rebuild, restore, purge, verify — each
         idempotent and recorded in the journal when done, so a kill or an error at any moment
         is finished by a rerun of `synix forget` (with or without the id) or by the next
         `synix run`, which finishes a pending forget before building.
verify   the raw bytes of every file Synix writes are searched for the forgotten artifact ids and
         distinctive lines of the conversations; only then is the journal deleted and success
         reported.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from synix_assets.engine import forget_files as files
from synix_assets.engine import forget_journal as journaling
from synix_assets.engine import forget_plan as planning
from synix_assets.engine import forget_verify as verifying
from synix_assets.project import ProjectPaths
from synix_resources.errors import BuildFailed, ForgetUnverified, StoreError
from synix_resources.folders import remove_inside
from synix_resources.llm.cache import ResponseCache
from synix_resources.process.locking import project_lock
from synix_resources.settings import settings
from synix_resources.store.artifact_store import ArtifactStore

log = logging.getLogger("synix.forget")
PHASES = ("store", "index", "cache", "dagster", "exports", "internal", "rebuild", "restore",
          "purge", "verify")

_active: set[str] = set()  # projects this process is forgetting in (the rebuild must not recurse)
_active_lock = threading.Lock()


@dataclass
class ForgetReport:
    target: str | None
    dry_run: bool
    conversation_ids: list[str] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)  # {"id", "layer", "group_key", "current"}
    files_deleted: list[str] = field(default_factory=list)
    files_rewritten: list[str] = field(default_factory=list)
    links_removed: list[dict] = field(default_factory=list)  # {"link", "points_to"}
    files_outside: list[dict] = field(default_factory=list)  # {"path", "points_to"}: untouched
    dagster_runs: list[str] = field(default_factory=list)
    index_docs_removed: int = 0
    cache_entries_removed: int = 0
    rebuild: dict | None = None
    rebuild_error: str | None = None
    purged: list[str] = field(default_factory=list)
    verified_files: int = 0
    resumed: bool = False  # finished a forget an earlier, interrupted call had started
    finished_pending: list[str] = field(default_factory=list)  # targets of pending forgets finished first
    nothing_pending: bool = False
    already_forgotten: bool = False

    def to_json(self) -> dict:
        return dict(self.__dict__)


# --- public API -------------------------------------------------------------------------------

def forget(paths: ProjectPaths, target: str | None = None, dry_run: bool = False, *,
           llm_config: dict | None = None) -> ForgetReport:
    """Forget `target` (a conversation id or an export file path); `dry_run` only lists. A
    pending forget (interrupted earlier) is finished first; with no target, only that."""
    paths = paths.on_branch("main")  # a conversation is forgotten by every branch at once
    if paths.on_postgres:
        raise StoreError("synix forget works on the SQLite store only: it proves the deletion "
                         "by reading the raw database files, which a PostgreSQL server keeps to "
                         "itself (WAL, replicas, backups)",
                         hint="see docs/postgres.md: forgetting on a PostgreSQL store")
    pipeline = paths.load_pipeline()
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    with project_lock(paths.lock, timeout_s=settings().lock_timeout_s), _forgetting(paths):
        pending = journaling.load(paths)
        if dry_run:
            return _dry_run(paths, pipeline, pending, target)
        finished = _finish(paths, pipeline, pending, llm_config) if pending else None
        if target is None:
            return finished or ForgetReport(None, False, nothing_pending=True)
        if finished is not None and _covers(pending, target):
            return finished
        journal = planning.plan(paths, pipeline, target)
        if journal is None:
            report = ForgetReport(target, False, conversation_ids=[target], already_forgotten=True)
        else:
            journaling.save(paths, journal)  # durable before anything is deleted
            report = _finish(paths, pipeline, journal, llm_config)
        if finished is not None:
            report.finished_pending = [finished.target]
        return report


def _dry_run(paths: ProjectPaths, pipeline, pending: dict | None, target: str | None) -> ForgetReport:
    if pending is not None and (target is None or _covers(pending, target)):
        report = _report_of(pending)
    elif target is None:
        report = ForgetReport(None, True, nothing_pending=True)
    else:
        journal = planning.plan(paths, pipeline, target)
        report = _report_of(journal) if journal else ForgetReport(
            target, True, conversation_ids=[target], already_forgotten=True)
        report.finished_pending = [pending["target"]] if pending else []
    report.dry_run = True
    return report


def finish_pending_forget(paths: ProjectPaths, *, llm_config: dict | None = None) -> ForgetReport | None:
    """Finish a forget that was interrupted (called first thing by every build); None if none
    is pending or this process is already forgetting in this project."""
    if not journaling.journal_path(paths).exists() or _is_active(paths):
        return None
    report = forget(paths, None, llm_config=llm_config)
    log.warning("finished the interrupted forget of %s before building", report.target)
    return report


def pending_forget(paths: ProjectPaths) -> str | None:
    """The target of a pending forget, if any."""
    journal = journaling.load(paths)
    return journal["target"] if journal else None


class _forgetting:
    def __init__(self, paths: ProjectPaths):
        self.key = str(paths.root)

    def __enter__(self):
        with _active_lock:
            _active.add(self.key)

    def __exit__(self, *exc):
        with _active_lock:
            _active.discard(self.key)


def _is_active(paths: ProjectPaths) -> bool:
    with _active_lock:
        return str(paths.root) in _active


def _covers(journal: dict, target: str) -> bool:
    return target == journal["target"] or target in journal["conversation_ids"]


def _report_of(journal: dict) -> ForgetReport:
    actions = [files.FileAction.from_json(f) for f in journal["files"]]
    results = journal.get("results", {})
    return ForgetReport(
        target=journal["target"], dry_run=False, conversation_ids=journal["conversation_ids"],
        artifacts=journal["artifacts"],
        files_deleted=[a.path for a in actions if a.action == files.DELETE],
        files_rewritten=[a.path for a in actions if a.action == files.REWRITE],
        links_removed=[{"link": a.path, "points_to": a.points_to} for a in actions
                       if a.action == files.UNLINK],
        files_outside=[{"path": a.path, "points_to": a.points_to} for a in actions
                       if a.action == files.OUTSIDE],
        dagster_runs=journal.get("dagster_runs", []),
        index_docs_removed=results.get("index_docs_removed", 0),
        cache_entries_removed=results.get("cache_entries_removed", 0),
        rebuild=results.get("rebuild"), rebuild_error=results.get("rebuild_error"),
        purged=results.get("purged", []), verified_files=results.get("verified_files", 0))


# --- phases -----------------------------------------------------------------------------------

def _finish(paths: ProjectPaths, pipeline, journal: dict, llm_config: dict | None) -> ForgetReport:
    resumed = bool(journal.get("done")) or journal.get("attempts", 0) > 0
    journal["attempts"] = journal.get("attempts", 0) + 1
    journaling.save(paths, journal)
    steps = {"store": _phase_store, "index": _phase_index, "cache": _phase_cache,
             "dagster": _phase_dagster, "exports": _phase_exports, "internal": _phase_internal,
             "rebuild": lambda p, pl, j: _phase_rebuild(p, j, llm_config),
             "restore": _phase_restore, "purge": _phase_purge, "verify": _phase_verify}
    for phase in PHASES:
        if phase in journal.get("done", []):
            continue
        results = steps[phase](paths, pipeline, journal) or {}
        journaling.mark_done(paths, journal, phase, **results)
    report = _report_of(journal)
    report.resumed = resumed
    journaling.discard(paths)
    return report


def _phase_store(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    cids = set(journal["conversation_ids"])
    store = ArtifactStore(paths.store)
    try:
        # First: from now on no scan (a build, the sensor) reads these conversations again.
        known = set(store.get_meta(planning.TOMBSTONES) or [])
        store.set_meta(planning.TOMBSTONES, sorted(known | cids))
        for layer, position in journal["fold_keep"].items():
            _trim_checkpoints(store, layer, position)
        for art in journal["artifacts"]:
            store.clear_failure(art["layer"], art["group_key"])
        store.delete(a["id"] for a in journal["artifacts"])  # and every branch's pointer to them
        for key in journal["ingest_meta"]:
            store.delete_meta(key)
        for info in store.branches():
            view = store.on_branch(info.name)
            for art in journal["artifacts"]:
                view.clear_failure(art["layer"], art["group_key"])
            view.delete_meta("build:fingerprint")
    finally:
        store.close()
    return {}


def _other_branches(paths: ProjectPaths) -> list[ProjectPaths]:
    """Every branch but main (snapshots such as main@previous included) that has a folder:
    their projections hold copies of the forgotten text too."""
    if not paths.branches_dir.is_dir():
        return []
    store = ArtifactStore(paths.store)
    try:
        names = [b.name for b in store.branches() if b.name != "main"]
    finally:
        store.close()
    return [paths.on_branch(n) for n in names if paths.on_branch(n).branch_dir.is_dir()]


def _trim_checkpoints(store, layer: str, position: int) -> None:
    """Keep the current version's checkpoints up to `position`; every other one (later ones,
    older step versions) may summarise the forgotten text."""
    version = store.get_meta(f"layer:version:{layer}")
    keep = [cp for cp in (store.checkpoints(layer, version) if version else [])
            if cp.position <= position]
    store.clear_checkpoints(layer)
    for cp in keep:
        store.put_checkpoint(layer, version, cp.position, cp.prefix_fingerprint, cp.state)


def _phase_index(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    # imported here: every build imports this module, and the index module loads numpy
    from synix_resources.search.index import SearchIndex

    removed = 0
    for branch in [paths, *_other_branches(paths)]:
        if not branch.search.exists():
            continue
        index = SearchIndex(branch.search, embeddings=False)
        try:
            removed += index.remove(a["id"] for a in journal["artifacts"])
            for text in journal["verify_texts"]:
                removed += len(index.delete_where_content_contains(text))
        finally:
            index.close()
    return {"index_docs_removed": journal.get("results", {}).get("index_docs_removed", 0) + removed}


def _phase_cache(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    if not paths.llm_cache.exists():
        return {"cache_entries_removed": 0}
    keys = set(journal["cache_keys"]) | planning.cache_keys(paths, journal)
    cache = ResponseCache(paths.llm_cache)
    try:
        removed = cache.delete_keys(keys)
    finally:
        cache.close()
    done = journal.get("results", {}).get("cache_entries_removed", 0)
    return {"cache_entries_removed": done + removed}


def _phase_dagster(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    """Delete the runs, the conversations' dynamic partitions, and wipe the asset index of the
    affected layers (it caches each asset's last materialization, preview included)."""
    if not planning.has_dagster(paths):
        return {"wiped_layers": []}
    with planning.dagster_instance(paths) as instance:
        run_ids = sorted(set(journal["dagster_runs"]) |
                         set(planning.dagster_runs_mentioning(paths, journal)))
        for run_id in run_ids:
            if run_id == planning.RUNLESS_RUN_ID:
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
        for name, key in _partitions_named(graphs, arts):
            if instance.has_dynamic_partition(name, key):
                instance.delete_dynamic_partition(name, key)
        layers = sorted({a["layer"] for a in arts})
        # runless events were restored materializations of any layer: restore them all again
        restore = set(pipeline.steps) if planning.RUNLESS_RUN_ID in run_ids else set(layers)
        wiped = sorted(set(journal.get("results", {}).get("wiped_layers", [])) |
                       (restore if run_ids else set()))
        if run_ids and layers:  # on every branch's graph that has the layer
            instance.wipe_assets([g.names.layer(l) for g in graphs for l in layers if l in g.pipeline.steps])
        return {"wiped_layers": wiped, "dagster_runs": run_ids}


def _dagster_graphs(paths: ProjectPaths) -> list:
    """Every branch's Dagster graph (main first): a forgotten conversation leaves all of them."""
    from synix_assets.dagster_defs.build import branch_graphs
    from synix_assets.engine.llm_identity import llm_identity

    return branch_graphs(paths.root, llm_identity())


def _partitions_named(graphs, arts: list[dict], *, conversations_only: bool = False) -> list[tuple[str, str]]:
    """(dynamic partition set, key) of each artifact on every branch graph declaring its layer
    (`conversations_only`: only partitions named after a conversation, not months or topics)."""
    from synix_assets.dagster_defs.partitions import dynamic_name

    found = {(dynamic_name(g.pipeline, a["layer"], g.names), a["group_key"])
             for g in graphs for a in arts if a["layer"] in g.pipeline.steps
             and (not conversations_only or g.pipeline.partitioning(a["layer"]) == "conversation")}
    return sorted((n, k) for n, k in found if n)


def _phase_exports(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    cids = set(journal["conversation_ids"])
    for data in journal["files"]:
        files.apply(paths.root, files.FileAction.from_json(data), cids)
    return {}


def _phase_internal(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    """Derived files the rebuild writes again: topic indexes (rebuilt from the current episodes
    on every topical build) and context documents read from a layer that lost artifacts (a
    missing one is always rewritten), zero-filled first — even if the rebuild fails, no old
    system prompt keeps the forgotten text."""
    doomed_layers = {a["layer"] for a in journal["artifacts"]}
    derived = [pipeline.resolve(proj.path) for proj in pipeline.projections.values()
               if proj.kind == "context_doc" and proj.from_ in doomed_layers]
    for branch in _other_branches(paths):  # a branch's context documents, whatever they read
        derived += [f for f in branch.branch_dir.rglob("*") if f.suffix in (".md", ".txt")]
    if paths.internal.is_dir() and not paths.internal.is_symlink():
        derived += list(paths.internal.iterdir())
    for f in derived:  # never through a link, never outside the project
        if f.is_file() and not f.is_symlink() and files.inside(paths.root, f):
            files.scrub_and_remove(paths.root, f)
    return {}


def _phase_rebuild(paths: ProjectPaths, journal: dict, llm_config: dict | None) -> dict:
    from synix_assets.engine.runner import run_build

    try:
        return {"rebuild": run_build(paths, llm_config=llm_config).to_json(), "rebuild_error": None}
    except BuildFailed as err:  # other partitions failing must not stop the purge
        return {"rebuild": err.report.to_json() if err.report else None,
                "rebuild_error": err.one_line()}


def _phase_restore(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    """Record (without previews) the surviving partitions of wiped assets, so the Dagster UI
    still shows them materialized; the rebuild already recorded what it built."""
    layers = journal.get("results", {}).get("wiped_layers", [])
    if not layers:
        return {}
    import dagster as dg

    from synix_assets.dagster_defs.partitions import partitions_for

    with planning.dagster_instance(paths) as instance:
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
                for art in branch_store.get_many(ref.artifact_id for ref in current.values()):
                    if partitioned and art.group_key in done:
                        continue
                    instance.report_runless_asset_event(dg.AssetMaterialization(
                        asset_key=key, partition=art.group_key if partitioned else None,
                        metadata={"artifact_id": art.artifact_id, "synix/status": "restored after forget"}))
        finally:
            store.close()
        return {}


def _phase_purge(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    """Fold every WAL back and VACUUM with secure_delete, waiting (bounded) for readers."""
    from synix_resources.search.index import SearchIndex

    deadline = time.monotonic() + verifying.wait_seconds()
    target = journal["target"]
    for branch in [paths, *_other_branches(paths)]:
        if not branch.search.exists():
            continue
        verifying.wait_for_readers(branch.search, deadline, target)
        index = SearchIndex(branch.search, embeddings=False)
        try:
            index.purge_free_pages()  # also rewrites the FTS segments
        finally:
            index.close()
    dbs = [Path(f) for f in verifying.in_child(
        "sqlite-files", {"folder": str(paths.state_dir), "also": [str(paths.store)]})]
    for db_path in dbs:
        verifying.purge(db_path, deadline, target)
    return {"purged": [str(p) for p in dbs]}


def _checked_files(paths: ProjectPaths, pipeline, journal: dict) -> list[Path]:
    """Every file Synix writes: .synix/ (WAL and SHM included), the export folders and what
    sits in the project folder itself (context.md); never through a link."""
    out = {p for p in verifying.walk(paths.state_dir)
           if p != journaling.journal_path(paths)}
    for src in pipeline.sources.values():
        folder = pipeline.resolve(src.path)
        if folder.is_file() and not folder.is_symlink():
            folder = folder.parent
        if files.inside(paths.root, folder):
            out |= set(verifying.walk(folder))
    out |= {p for p in paths.root.iterdir() if p.is_file() and not p.is_symlink()}
    store = Path(paths.store)
    for suffix in ("", "-wal", "-shm"):
        extra = Path(f"{store}{suffix}")
        if extra.is_file() and not extra.is_symlink():
            out.add(extra)
    return sorted(out)


def _leftover_partitions(paths: ProjectPaths, pipeline, journal: dict) -> list[tuple[str, str]]:
    """Dagster partitions still named after a forgotten conversation."""
    if not planning.has_dagster(paths):
        return []
    with planning.dagster_instance(paths) as instance:
        named = _partitions_named(_dagster_graphs(paths), journal["artifacts"], conversations_only=True)
        return [(n, k) for n, k in named if instance.has_dynamic_partition(n, k)]


def _phase_verify(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    checked = _checked_files(paths, pipeline, journal)
    found = {path: set(kinds) for path, kinds in verifying.in_child("leftovers", {
        "files": [str(p) for p in checked], "texts": journal["verify_texts"],
        "ids": [a["id"] for a in journal["artifacts"]]}).items()}
    cids = set(journal["conversation_ids"])
    for data in journal["files"]:
        act = files.FileAction.from_json(data)
        if act.action == files.REWRITE and files.holds_any(Path(act.path), cids):
            found.setdefault(act.path, set()).add("a forgotten conversation")
    leftover_keys = planning.cache_keys(paths, journal)
    if leftover_keys:
        found.setdefault(str(paths.llm_cache), set()).add(
            f"{len(leftover_keys)} cached answer(s) derived from it")
    for name, key in _leftover_partitions(paths, pipeline, journal):
        found.setdefault(str(paths.dagster_home), set()).add(f"Dagster partition {name}/{key}")
    if found:
        # purge must run again on the rerun: whatever held the text may be gone by then; and
        # cached answers still derived from it are deleted again then, so a rerun can finish
        # (no leftover may keep the project from building for good)
        again = {"purge"} | ({"cache"} if leftover_keys else set())
        journal["done"] = [p for p in journal["done"] if p not in again]
        journaling.save(paths, journal)
        first = sorted(found)[0]
        raise ForgetUnverified(
            f"forget of {journal['target']} is not finished: {', '.join(sorted(found[first]))} "
            f"still in {first}" + (f" and {len(found) - 1} other file(s)" if len(found) > 1 else ""),
            hint="if that file is a copy you made, delete it; then rerun `synix forget` (it stays "
                 "pending until verified)")
    return {"verified_files": len(checked)}


