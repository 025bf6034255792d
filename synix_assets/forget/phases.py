"""The phases of `synix forget` that work on Synix's own files: the store, the search index, the
LLM cache, the exports, derived files, the purge of SQLite files and the final raw-byte check.
Each takes (paths, pipeline, journal), is idempotent and returns the results the journal records
(core.py runs them in order; dagster.py holds the Dagster ones)."""
from __future__ import annotations

import time
from pathlib import Path

from synix_assets.forget import dagster as dagster_phases
from synix_assets.forget import files
from synix_assets.forget import journal as journaling
from synix_assets.forget import plan as planning
from synix_assets.forget import verify as verifying
from synix_assets.project import MAIN, ProjectPaths
from synix_assets.project.branches import registered_branches
from synix_resources.agent_memory import AGENT_LAYERS
from synix_resources.agent_memory.log import MemoryLog
from synix_resources.errors import ForgetUnverified
from synix_resources.ledger.store import EvidenceLedger
from synix_resources.llm.cache import ResponseCache
from synix_resources.store.artifact_store import ArtifactStore


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
        store.drop_partition_names(journal.get("partition_names", {}))
        for key in journal["ingest_meta"]:
            store.delete_meta(key)
        for info in store.branches():
            view = store.on_branch(info.name)
            for art in journal["artifacts"]:
                view.clear_failure(art["layer"], art["group_key"])
            view.delete_meta("build:fingerprint")
    finally:
        store.close()
    return {"memory_ops_removed": journal.get("results", {}).get("memory_ops_removed", 0)
            + _drop_memory_ops(paths, journal),
            "evidence_events_removed": _drop_evidence(paths, cids)}


def _drop_evidence(paths: ProjectPaths, cids: set[str]) -> int:
    """The ledger's events of the forgotten conversations (the one delete it allows); they are
    recorded as forgotten, so re-reading an old export never appends them again."""
    if not paths.ledger.is_file():
        return 0
    ledger = EvidenceLedger(paths.ledger)
    try:
        return ledger.forget(cids)
    finally:
        ledger.close()


def _drop_memory_ops(paths: ProjectPaths, journal: dict) -> int:
    """Every branch's memory log loses the ops of the memories and links made from the
    forgotten records (else the rebuild would make them again from the log)."""
    doomed = {a["group_key"] for a in journal["artifacts"] if a["layer"] in AGENT_LAYERS}
    removed = 0
    for branch in [paths, *_other_branches(paths)]:
        if doomed and branch.memory_log.is_file():
            log = MemoryLog(branch.memory_log)
            try:
                removed += log.drop(doomed)
            finally:
                log.close()
    return removed


def _other_branches(paths: ProjectPaths) -> list[ProjectPaths]:
    """Every branch but main (snapshots such as main@previous included) that has a folder:
    their projections hold copies of the forgotten text too."""
    if not paths.branches_dir.is_dir():
        return []
    return [paths.on_branch(n) for n in registered_branches(paths, snapshots=True)
            if n != MAIN and paths.on_branch(n).branch_dir.is_dir()]


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


def _phase_verify(paths: ProjectPaths, pipeline, journal: dict) -> dict:
    checked = _checked_files(paths, pipeline, journal)
    # Python files are code the user wrote (the pipeline script, its branches' copies): a record
    # id there is a reference they typed (`pipeline.purge("…")`), not memory; their text is
    # still checked for the forgotten conversation's words
    data = [str(p) for p in checked if p.suffix != ".py"]
    code = [str(p) for p in checked if p.suffix == ".py"]
    found = {path: set(kinds) for path, kinds in verifying.in_child("leftovers", {
        "files": data, "texts": journal["verify_texts"],
        "ids": [a["id"] for a in journal["artifacts"]]}).items()}
    if code:
        found.update({path: set(kinds) for path, kinds in verifying.in_child("leftovers", {
            "files": code, "texts": journal["verify_texts"], "ids": []}).items()})
    cids = set(journal["conversation_ids"])
    for data in journal["files"]:
        act = files.FileAction.from_json(data)
        if act.action == files.REWRITE and files.holds_any(Path(act.path), cids):
            found.setdefault(act.path, set()).add("a forgotten conversation")
    leftover_keys = planning.cache_keys(paths, journal)
    if leftover_keys:
        found.setdefault(str(paths.llm_cache), set()).add(
            f"{len(leftover_keys)} cached answer(s) derived from it")
    for name, key in dagster_phases.leftover_partitions(paths, pipeline, journal):
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
