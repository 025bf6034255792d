"""`synix forget`: remove a conversation (or a whole export file) and everything built from it.

Steps, in this order, under the project's build lock:
1. resolve the target to conversation ids and the export files that hold them;
2. delete every version of their transcripts and, through provenance edges, every artifact derived
   from them (superseded versions included), their fold checkpoints past the forgotten item, their
   open failures and the ingest summaries of the old export bytes;
3. take them out of the search index, the internal topic indexes, the LLM response cache and the
   Dagster event log (runs that recorded them are deleted: SQLite event storage has no per-event
   delete, see `docs/encryption.md` → "Forgetting");
4. rewrite the export files without the conversations (or delete a file that is the target), so the
   next build cannot ingest them again, and record tombstones;
5. rebuild what used them (`run_build`) and purge free pages and WAL files of every SQLite file.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from synix_assets.engine.ingest import PARSER_VERSION, SourceReader, file_sha256
from synix_assets.engine.locking import project_lock
from synix_assets.project import ProjectPaths
from synix_resources.errors import BuildFailed, SynixError
from synix_resources.llm.cache import ResponseCache
from synix_resources.search.index import SearchIndex
from synix_resources.store.artifact_store import Artifact

log = logging.getLogger("synix.forget")
TOMBSTONES = "forget:tombstones"
# Lines this long are distinctive enough to find a forgotten text inside a cached prompt.
SNIPPET_MIN_CHARS = 24
SNIPPETS_PER_ARTIFACT = 12
_ID_KEYS = ("conversation_id", "id", "uuid")


@dataclass
class ForgetReport:
    target: str
    dry_run: bool
    conversation_ids: list[str] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)  # {"id", "layer", "group_key", "current"}
    files_deleted: list[str] = field(default_factory=list)
    files_rewritten: list[str] = field(default_factory=list)
    dagster_runs: list[str] = field(default_factory=list)
    index_docs_removed: int = 0
    cache_entries_removed: int = 0
    rebuild: dict | None = None
    rebuild_error: str | None = None
    purged: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def forget(paths: ProjectPaths, target: str, dry_run: bool = False, *,
           llm_config: dict | None = None) -> ForgetReport:
    """Forget `target` (a conversation id or an export file path); `dry_run` only lists."""
    pipeline = paths.load_pipeline()
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    report = ForgetReport(target, dry_run)
    with project_lock(paths.lock):
        store = paths.open_store()
        try:
            files, cids, whole_file = _resolve(pipeline, store, paths, target)
            report.conversation_ids = sorted(cids)
            doomed = _doomed_artifacts(store, cids)
            report.artifacts = [{"id": a.artifact_id, "layer": a.layer, "group_key": a.group_key,
                                 "current": a.superseded_at is None} for a in doomed]
            file_plan = _file_plan(files, cids, whole_file)
            report.files_deleted = [str(p) for p, keep in file_plan if keep is None]
            report.files_rewritten = [str(p) for p, keep in file_plan if keep is not None]
            snippets = _snippets(doomed)
            ids = {a.artifact_id for a in doomed}
            report.dagster_runs = _dagster_runs_mentioning(paths, ids, snippets)
            if dry_run:
                return report
            _forget_in_store(pipeline, store, doomed, file_plan)
            store.set_meta(TOMBSTONES, sorted(set(store.get_meta(TOMBSTONES) or []) | cids))
        finally:
            store.close()
        report.index_docs_removed = _forget_in_index(paths, ids, snippets)
        report.cache_entries_removed = _forget_in_cache(paths, doomed, snippets)
        wiped = _forget_in_dagster(paths, pipeline, report.dagster_runs, doomed)
        _rewrite_exports(file_plan)
        _drop_internal_indexes(paths)
        report.rebuild, report.rebuild_error = _rebuild(paths, llm_config)
        _restore_materializations(paths, pipeline, wiped)
        # The rebuild may have launched Dagster runs; none of them saw the forgotten text.
        report.purged = purge_sqlite_files(paths)
    return report


# --- what to forget ---------------------------------------------------------------------------

def _resolve(pipeline, store, paths: ProjectPaths, target: str) -> tuple[list[Path], set[str], bool]:
    """(export files holding the target, conversation ids to forget, target is a file)."""
    reader = SourceReader(pipeline, store)
    scan = reader.scan()
    candidate = Path(target).expanduser()
    for base in (Path.cwd(), paths.root, paths.root / "exports"):
        path = candidate if candidate.is_absolute() else base / candidate
        if path.is_file():
            path = path.resolve()
            known = {Path(f).resolve() for f in scan.files}
            if path not in known:
                raise SynixError(f"{path} is not an export file of the project {paths.root}",
                                 hint="give a file from the project's export folders, or a "
                                      "conversation id")
            cids = {s.conversation_id for s in scan.summaries if Path(s.file).resolve() == path}
            cids |= {a.metadata.get("meta.chat.conversation_id") for a in _leaves(store)
                     if _same_file(a.metadata.get("meta.source.path"), path)} - {None}
            return [path], cids, True
    files = sorted({Path(s.file).resolve() for s in scan.summaries if s.conversation_id == target})
    known = any(a.metadata.get("meta.chat.conversation_id") == target for a in _leaves(store))
    if not files and not known:
        raise SynixError(f"no conversation or export file {target!r} in the project {paths.root}",
                         hint="see `synix status` / `synix search` for conversation ids")
    return files, {target}, False


def _same_file(recorded, path: Path) -> bool:
    return bool(recorded) and Path(recorded).resolve() == path


def _leaves(store) -> list[Artifact]:
    """Every level-0 artifact (all versions) of every layer the store knows."""
    return [a for layer in store.layers() for a in store.list_layer(layer, include_superseded=True)
            if a.level == 0]


def _doomed_artifacts(store, cids: set[str]) -> list[Artifact]:
    """Every version of the conversations' artifacts and everything derived from them."""
    found: dict[str, Artifact] = {}
    for layer in store.layers():
        for art in store.list_layer(layer, include_superseded=True):
            if art.metadata.get("meta.chat.conversation_id") in cids:
                found[art.artifact_id] = art
    for art in list(found.values()):
        for down in store.descendants(art.artifact_id):
            found.setdefault(down.artifact_id, down)
    return sorted(found.values(), key=lambda a: (a.level, a.layer, a.group_key, a.artifact_id))


def _snippets(arts: list[Artifact]) -> list[str]:
    """Distinctive lines of the forgotten texts, used to find them in prompts and events."""
    out: dict[str, None] = {}
    for art in arts:
        lines = sorted({ln.strip() for ln in art.content.splitlines()
                        if len(ln.strip()) >= SNIPPET_MIN_CHARS}, key=lambda s: (-len(s), s))
        for line in lines[:SNIPPETS_PER_ARTIFACT]:
            out[line[:200]] = None
    return list(out)


def _file_plan(files: list[Path], cids: set[str], whole_file: bool):
    """[(path, what to keep, or None to delete the file)]: a file that is the target, or that
    holds nothing but forgotten conversations, goes; others are rewritten without them."""
    plan = []
    for path in files:
        kept = None if whole_file else _without(path, cids)
        plan.append((path, kept if kept and kept["items"] else None))
    return plan


def _matches(item, cids: set[str]) -> bool:
    return isinstance(item, dict) and any(str(item.get(k)) in cids for k in _ID_KEYS if item.get(k))


def _without(path: Path, cids: set[str]) -> dict | None:
    """The export's conversations minus the forgotten ones ({"kind", "items", ...})."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            member = next(n for n in names if n.rsplit("/", 1)[-1] == "conversations.json")
            items = json.loads(zf.read(member))
        return {"kind": "zip", "member": member, "items": [i for i in items if not _matches(i, cids)]}
    if path.suffix.lower() == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        kept = [ln for ln in lines if ln.strip() and not _jsonl_matches(ln, cids)]
        return {"kind": "jsonl", "items": kept}
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        return {"kind": "wrapped", "data": data,
                "items": [i for i in data["conversations"] if not _matches(i, cids)]}
    return {"kind": "list", "items": [i for i in data if not _matches(i, cids)]}


def _jsonl_matches(line: str, cids: set[str]) -> bool:
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(row, dict) and str(row.get("sessionId") or row.get("session_id")) in cids


# --- forgetting -------------------------------------------------------------------------------

def _forget_in_store(pipeline, store, doomed: list[Artifact], file_plan) -> None:
    ids = {a.artifact_id for a in doomed}
    for layer, step in pipeline.steps.items():
        if step.kind == "fold":
            _trim_checkpoints(pipeline, store, layer, ids)
    for art in doomed:
        store.clear_failure(art.layer, art.group_key)
    store.delete(ids)
    # Parse summaries (titles, dates) of the old export bytes: never read again, so blank them.
    for path, _ in file_plan:
        st = path.stat()
        for spelled in {str(path), *(str(f) for _, f, _ in SourceReader(pipeline, store).files()
                                     if Path(f).resolve() == path)}:
            store.delete_meta(f"ingest:stat:{spelled}:{st.st_size}:{st.st_mtime_ns}")
        digest = file_sha256(path)
        for source in pipeline.sources:
            store.delete_meta(f"ingest:file:{digest}:{source}:{PARSER_VERSION}")
    store.delete_meta("build:fingerprint")


def _trim_checkpoints(pipeline, store, layer: str, doomed_ids: set[str]) -> None:
    """Keep the fold checkpoints that summarise only items before the first forgotten one."""
    current = store.current(layer, "all")
    if current is None:
        store.clear_checkpoints(layer)
        return
    order = list(current.parent_ids)
    first = min((i for i, pid in enumerate(order) if pid in doomed_ids), default=None)
    if first is None and current.artifact_id not in doomed_ids:
        return
    version = store.get_meta(f"layer:version:{layer}")
    keep = [cp for cp in (store.checkpoints(layer, version) if version else [])
            if first is not None and cp.position <= first]
    store.clear_checkpoints(layer)
    for cp in keep:
        store.put_checkpoint(layer, version, cp.position, cp.prefix_fingerprint, cp.state)


def _forget_in_index(paths: ProjectPaths, ids: set[str], snippets: list[str]) -> int:
    if not paths.search.exists():
        return 0
    index = SearchIndex(paths.search, embeddings=False)
    try:
        removed = index.remove(ids)
        for snippet in snippets:
            removed += len(index.delete_where_content_contains(snippet))
    finally:
        index.close()
    return removed


def _forget_in_cache(paths: ProjectPaths, doomed: list[Artifact], snippets: list[str]) -> int:
    """Cached exchanges of the forgotten artifacts: by prompt hash from their audit, and every
    prompt/answer containing their text (map-reduce parts and fold steps are not in the audit)."""
    if not paths.llm_cache.exists():
        return 0
    cache = ResponseCache(paths.llm_cache)
    try:
        hashes = {(a.audit or {}).get("rendered_prompt_hash") for a in doomed} - {None}
        removed = 0
        with sqlite3.connect(str(paths.llm_cache)) as db:
            keys = [r[0] for r in db.execute("SELECT key FROM responses WHERE prompt_hash IN "
                                             "(SELECT value FROM json_each(?))",
                                             (json.dumps(sorted(hashes)),))]
        db.close()
        for key in keys:
            removed += cache.delete_key(key)
        for snippet in snippets:
            removed += cache.delete_matching(snippet)
    finally:
        cache.close()
    return removed


def _instance(paths: ProjectPaths):
    from synix_assets.engine.runner import dagster_instance

    return dagster_instance(paths)


def _dagster_runs_mentioning(paths: ProjectPaths, ids: set[str], snippets: list[str]) -> list[str]:
    """Dagster runs whose events name a forgotten artifact or contain its text (previews)."""
    if not ids or not (paths.dagster_home / "history").exists():
        return []
    import dagster as dg

    instance = _instance(paths)
    hits = []
    for run in instance.get_runs():
        text = "\n".join(dg.serialize_value(e) for e in instance.all_logs(run.run_id))
        if any(i in text for i in ids) or any(json.dumps(s)[1:-1] in text for s in snippets):
            hits.append(run.run_id)
    return hits


def _forget_in_dagster(paths: ProjectPaths, pipeline, run_ids: list[str], doomed) -> list[str]:
    """Delete the runs, the conversations' dynamic partitions, and wipe the asset index of the
    affected layers (it caches each asset's last materialization, preview included); returns the
    wiped layers."""
    if not (paths.dagster_home / "history").exists():
        return []
    from synix_assets.dagster_defs.assets import layer_key
    from synix_assets.dagster_defs.partitions import dynamic_name

    instance = _instance(paths)
    for run_id in run_ids:
        instance.delete_run(run_id)  # the run record and all its events
        for suffix in (".db", ".db-wal", ".db-shm"):
            shard = paths.dagster_home / "history" / "runs" / f"{run_id}{suffix}"
            shard.unlink(missing_ok=True)
        shutil.rmtree(paths.dagster_home / "storage" / run_id, ignore_errors=True)
    partitions = {(dynamic_name(pipeline, a.layer), a.group_key) for a in doomed
                  if a.layer in pipeline.steps}
    for name, key in partitions:
        if name and instance.has_dynamic_partition(name, key):
            instance.delete_dynamic_partition(name, key)
    layers = sorted({a.layer for a in doomed if a.layer in pipeline.steps})
    if run_ids and layers:
        instance.wipe_assets([layer_key(layer) for layer in layers])
    return layers if run_ids else []


def _restore_materializations(paths: ProjectPaths, pipeline, layers: list[str]) -> None:
    """Record (without previews) the surviving partitions of wiped assets, so the Dagster UI
    still shows them materialized; the rebuild already recorded what it built."""
    if not layers:
        return
    import dagster as dg

    from synix_assets.dagster_defs.assets import layer_key
    from synix_assets.dagster_defs.partitions import partitions_for

    instance = _instance(paths)
    store = paths.open_store()
    try:
        for layer in layers:
            key = layer_key(layer)
            partitioned = partitions_for(pipeline, layer) is not None
            done = instance.get_materialized_partitions(key) if partitioned else set()
            if not partitioned and instance.get_latest_materialization_event(key) is not None:
                continue
            for art in store.list_layer(layer):
                if partitioned and art.group_key in done:
                    continue
                instance.report_runless_asset_event(dg.AssetMaterialization(
                    asset_key=key, partition=art.group_key if partitioned else None,
                    metadata={"artifact_id": art.artifact_id, "synix/status": "restored after forget"}))
    finally:
        store.close()


def _rewrite_exports(file_plan) -> None:
    for path, kept in file_plan:
        _scrub(path)
        if kept is None:
            path.unlink()
            continue
        tmp = path.with_name(f".{path.name}.forget-tmp")
        if kept["kind"] == "zip":
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
                zf.writestr(kept["member"], json.dumps(kept["items"], ensure_ascii=False))
        elif kept["kind"] == "jsonl":
            tmp.write_text("\n".join(kept["items"]) + "\n", encoding="utf-8")
        else:
            data = {**kept["data"], "conversations": kept["items"]} if kept["kind"] == "wrapped" \
                else kept["items"]
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)


def _scrub(path: Path) -> None:
    """Overwrite a file's bytes in place before it is replaced or deleted (best effort: a
    copy-on-write or journaling file system may still hold old blocks)."""
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.write(b"\0" * size)
        fh.flush()
        os.fsync(fh.fileno())


def _drop_internal_indexes(paths: ProjectPaths) -> None:
    """Topic indexes are rebuilt from the current episodes on every topical build."""
    if paths.internal.is_dir():
        for f in paths.internal.iterdir():
            if f.is_file():
                _scrub(f)
                f.unlink()


def _rebuild(paths: ProjectPaths, llm_config: dict | None) -> tuple[dict | None, str | None]:
    from synix_assets.engine.runner import run_build

    try:
        return run_build(paths, llm_config=llm_config).to_json(), None
    except BuildFailed as err:  # other partitions failing must not stop the purge
        return (err.report.to_json() if err.report else None), err.one_line()


def purge_sqlite_files(paths: ProjectPaths) -> list[str]:
    """Fold every WAL back, then VACUUM with secure_delete: freed pages leave the files."""
    purged = []
    if paths.search.exists():
        index = SearchIndex(paths.search, embeddings=False)
        try:
            index.purge_free_pages()  # also rewrites the FTS segments
        finally:
            index.close()
    for db_path in sorted(paths.state_dir.rglob("*.db")):
        try:
            with open(db_path, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    continue
        except OSError:
            continue
        conn = sqlite3.connect(str(db_path), timeout=30, isolation_level=None)
        try:
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as err:
            log.warning("could not purge %s: %s", db_path, err)
            continue
        finally:
            conn.close()
        purged.append(str(db_path))
    return purged
