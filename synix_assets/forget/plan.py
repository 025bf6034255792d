"""Planning a `synix forget`: what it will remove, computed before anything is (the journal).

The target resolves to conversation ids and the export files holding them; provenance gives every
artifact derived from them; the response cache's recorded sources give every cached answer whose
input derived from them; Dagster runs are found by the ids and text their events carry. Also the
distinctive lines used to verify, at the end, that nothing of the conversations is left.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from synix_assets.forget import files
from synix_assets.forget.dagster import dagster_runs_mentioning
from synix_assets.project import ProjectPaths
from synix_assets.sources.model import file_sha256
from synix_assets.sources.reader import SourceReader, summary_key
from synix_resources.errors import SynixError
from synix_resources.fingerprints import sha256_text
from synix_resources.live.inbox import Inbox
from synix_resources.llm.cache import ResponseCache
from synix_resources.store.artifact_store import Artifact, ArtifactStore

TOMBSTONES = "forget:tombstones"
# Lines this long are distinctive enough to recognise a forgotten text anywhere.
SNIPPET_MIN_CHARS = 24
SNIPPET_MAX_CHARS = 200
SNIPPETS_PER_ARTIFACT = 12
VERIFY_SNIPPETS = 48
LEGACY_CACHE_ROUNDS = 50
_HEADER_PREFIXES = ("# ", "Conversation: ", "Date: ", "Source: ", "[#")


def plan(paths: ProjectPaths, pipeline, target: str) -> dict | None:
    """The journal of a new forget (nothing is changed); None if `target` was forgotten before."""
    store = ArtifactStore(paths.store)
    try:
        found = _resolve(pipeline, store, paths, target)
        if found is None:
            return None
        export_files, cids, target_file = found
        doomed = _doomed_artifacts(store, cids)
        ids = {a.artifact_id for a in doomed}
        actions = [files.plan_file(paths.root, p, p == target_file, cids) for p in export_files]
        leaves = [a for a in doomed if a.level == 0]
        texts = _snippets(doomed)
        journal = {
            "version": 1, "target": target, "started_at": time.time(),
            "conversation_ids": sorted(cids),
            "files": [a.to_json() for a in actions],
            "artifacts": [{"id": a.artifact_id, "layer": a.layer, "group_key": a.group_key,
                           "current": a.superseded_at is None} for a in doomed],
            "text_hashes": sorted({sha256_text(a.content) for a in doomed}),
            "prompt_hashes": sorted({(a.audit or {}).get("rendered_prompt_hash") for a in doomed}
                                    - {None}),
            # the readable Dagster partition of each forgotten conversation (its title's slug)
            "partition_names": store.partition_names({a.group_key for a in doomed}),
            "fold_keep": _fold_keep(pipeline, store, ids),
            "ingest_meta": _ingest_meta_keys(pipeline, store, export_files, paths.root)
                           + _live_meta_keys(pipeline, export_files, cids),
            "match_texts": texts,
            "verify_texts": _distinctive(leaves, _leaves(store, exclude=ids)),
            "done": [], "results": {},
        }
    finally:
        store.close()
    journal["dagster_runs"] = dagster_runs_mentioning(paths, journal)
    journal["cache_keys"] = sorted(cache_keys(paths, journal))
    return journal


def _resolve(pipeline, store, paths: ProjectPaths, target: str):
    """(export files holding the conversations, conversation ids, the target file or None), or
    None when the target is a conversation forgotten before. A file target's conversations are
    also taken out of other exports that hold them (cumulative exports repeat old ones)."""
    reader = SourceReader(pipeline, store)
    scan = reader.scan()
    known = {files.absolute(f, paths.root) for f in scan.files}

    def holders_of(cids: set[str]) -> set[Path]:
        return {files.absolute(s.file, paths.root) for s in scan.summaries
                if s.conversation_id in cids}

    for base in (Path.cwd(), paths.root, paths.root / "exports"):
        path = files.absolute(target, base)
        if not (path.is_file() or path.is_symlink()):
            continue
        # the same file reached through a linked export folder counts too
        path = path if path in known else next(
            (k for k in known if os.path.realpath(k) == os.path.realpath(path)), path)
        if path not in known:
            raise SynixError(f"{path} is not an export file of the project {paths.root}",
                             hint="give a file from the project's export folders, or a "
                                  "conversation id")
        cids = {s.conversation_id for s in scan.summaries
                if files.absolute(s.file, paths.root) == path}
        cids |= {a.metadata.get("meta.chat.conversation_id") for a in _leaves(store)
                 if _same_file(a.metadata.get("meta.source.path"), path, paths.root)} - {None}
        return sorted(holders_of(cids) | {path}), cids, path
    holders = sorted(holders_of({target}))
    built = any(a.metadata.get("meta.chat.conversation_id") == target for a in _leaves(store))
    if not holders and not built:
        if target in set(store.get_meta(TOMBSTONES) or []):
            return None
        raise SynixError(f"no conversation or export file {target!r} in the project {paths.root}",
                         hint="see `synix status` / `synix search` for conversation ids")
    if not holders:  # tombstones hide it from the scan; its files may still hold it
        holders = [p for p in sorted(known) if files.holds_any(p, {target})]
    return holders, {target}, None


def _same_file(recorded, path: Path, root: Path) -> bool:
    return bool(recorded) and files.absolute(recorded, root) == path


def _leaves(store, exclude: set[str] = frozenset()) -> list[Artifact]:
    """Every level-0 artifact (all versions) of every layer the store knows."""
    return [a for layer in store.layers() for a in store.list_layer(layer, include_superseded=True)
            if a.level == 0 and a.artifact_id not in exclude]


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


def _lines(art: Artifact, *, messages_only: bool = False) -> list[str]:
    lines = {ln.strip() for ln in art.content.splitlines() if len(ln.strip()) >= SNIPPET_MIN_CHARS}
    if messages_only:
        lines = {ln for ln in lines if not ln.startswith(_HEADER_PREFIXES)}
    return sorted((ln[:SNIPPET_MAX_CHARS] for ln in lines), key=lambda s: (-len(s), s))


def _snippets(arts: list[Artifact]) -> list[str]:
    """Distinctive lines of every forgotten text (for cache entries written before sources were
    recorded, and Dagster events)."""
    out: dict[str, None] = {}
    for art in arts:
        for line in _lines(art)[:SNIPPETS_PER_ARTIFACT]:
            out[line] = None
    return list(out)


def _distinctive(leaves: list[Artifact], survivors: list[Artifact]) -> list[str]:
    """Message lines found only in the forgotten conversations: none may remain anywhere. Taken
    round-robin over the conversations (longest lines first), so each is represented and the
    check against the surviving conversations stays bounded."""
    per_leaf = [_lines(art, messages_only=True) for art in leaves]
    candidates: dict[str, None] = {}
    for rank in range(max((len(lines) for lines in per_leaf), default=0)):
        for lines in per_leaf:
            if rank < len(lines):
                candidates[lines[rank]] = None
        if len(candidates) >= 2 * VERIFY_SNIPPETS:
            break
    picked = list(candidates)[:2 * VERIFY_SNIPPETS]
    for art in survivors:
        if not picked:
            break
        picked = [s for s in picked if s not in art.content]
    return picked[:VERIFY_SNIPPETS]


def _fold_keep(pipeline, store, doomed_ids: set[str]) -> dict[str, int]:
    """Per fold layer: checkpoints at or before this position summarise only items before the
    first forgotten one and are kept; later ones go."""
    keep = {}
    for layer, step in pipeline.steps.items():
        if step.kind != "fold":
            continue
        current = store.current(layer, "all")
        if current is None or current.artifact_id in doomed_ids and not current.parent_ids:
            keep[layer] = 0
            continue
        order = list(current.parent_ids)
        keep[layer] = min((i for i, pid in enumerate(order) if pid in doomed_ids),
                          default=len(order))
    return keep


def _ingest_meta_keys(pipeline, store, export_files: list[Path], root: Path) -> list[str]:
    """Parse summaries (titles, dates) of the old export bytes: never read again, so removed."""
    wanted = set(export_files)
    keys = []
    for _, f, _ in SourceReader(pipeline, store).files():
        if files.absolute(f, root) not in wanted or not f.is_file():
            continue
        st = f.stat()
        keys.append(f"ingest:stat:{f}:{st.st_size}:{st.st_mtime_ns}")
        digest = file_sha256(f)
        keys += [summary_key(pipeline, source, f, digest) for source in pipeline.sources]
    return sorted(set(keys))


def _live_meta_keys(pipeline, export_files: list[Path], cids: set[str]) -> list[str]:
    """The cached summaries (titles: a session's first words) of every version of the
    forgotten live sessions (sources/live.py `live_summaries`)."""
    keys = []
    for source in pipeline.sources.values():
        path = pipeline.resolve(source.path)
        if source.kind != "live" or path not in export_files or not path.is_file():
            continue
        inbox = Inbox(path, read_only=True)
        try:
            for cid in sorted(cids):
                info = inbox.session(cid) or {"version": 0}
                keys += [f"ingest:live:{source.name}:{path}:{cid}:{v}" for v in range(1, info["version"] + 1)]
        finally:
            inbox.close()
    return keys


def cache_keys(paths: ProjectPaths, journal: dict) -> set[str]:
    """Every cached exchange whose input derived from the forgotten artifacts: by recorded
    sources (followed through answers fed into later requests; a source naming an artifact that
    does not derive from them is judged by that record, not by its bytes), and — for entries
    written before sources were recorded — by the prompt hashes in the forgotten artifacts'
    audit and by their text. An answer re-derived without the forgotten text is never taken
    for one derived from it, however identical: or the rebuild would write what verify then
    finds, and the forget could never finish."""
    if not paths.llm_cache.exists():
        return set()
    doomed = {a["id"] for a in journal["artifacts"]}
    cache = ResponseCache(paths.llm_cache)
    store = ArtifactStore(paths.store)
    try:
        keys = cache.derived_keys(doomed, journal["text_hashes"],
                                  kept=lambda ids: store.existing_ids(ids) - doomed)
        legacy = set(cache.keys_without_sources())
        keys |= cache.keys_for_prompt_hashes(journal["prompt_hashes"]) & legacy
        texts = list(journal["match_texts"])
        for _ in range(LEGACY_CACHE_ROUNDS):  # a fold's state is the next step's input
            hits = cache.keys_mentioning(texts, legacy - keys) if legacy - keys else set()
            if not hits:
                break
            keys |= hits
            texts = [t for key in hits for t in _answer_lines(cache, key)]
    finally:
        store.close()
        cache.close()
    return keys


def _answer_lines(cache: ResponseCache, key: str) -> list[str]:
    response = cache.get(key)
    if response is None:
        return []
    return [ln.strip()[:SNIPPET_MAX_CHARS] for ln in response.text.splitlines()
            if len(ln.strip()) >= SNIPPET_MIN_CHARS]
