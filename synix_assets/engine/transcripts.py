"""Level 0: a merge of sources into one transcript per conversation (no LLM)."""
from __future__ import annotations

from synix_resources import pii
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, WorkItem
from synix_assets.engine.periods import period_of
from synix_assets.sources import fuzzy
from synix_assets.sources.model import ConversationSummary, IngestResult
from synix_assets.sources.reader import dedupe, pick
from synix_resources.fingerprints import source_key

STORE_BATCH = 500  # transcripts per store transaction


def _groups(ctx, layer: str, scan: IngestResult) -> tuple[dict[str, list[ConversationSummary]],
                                                          dict[str, list[fuzzy.Duplicate]]]:
    """Group key → the conversation(s) the merge keeps, and (dedupe="fuzzy") group key → the
    near-duplicates merged into it."""
    step = ctx.pipeline.steps[layer]
    wanted = set(step.from_)
    groups = dedupe([s for s in scan.summaries if s.source in wanted],
                    dedupe=step.config["dedupe"], conflict=step.config["conflict"])
    if step.config["dedupe"] != "fuzzy" or step.config["conflict"] == "keep_all":
        return groups, {}
    return fuzzy.merge_near_duplicates(groups, lambda items: _texts(ctx, items), step.config["threshold"],
                                       lambda items: pick(items, step.config["conflict"]))


def _texts(ctx, items) -> dict[str, str]:
    """Transcript text by content hash, read from the exports (a conversation's content hash
    is its text's, so the texts of one scan are the same whenever they are read)."""
    out: dict[str, str] = {}
    for s, conv in ctx.reader.stream((s, s) for s in items):
        out[s.content_hash] = conv.transcript()
    return out


def _key(layer: str, s: ConversationSummary, merged: list[fuzzy.Duplicate], version: str) -> str:
    """A transcript's key: its conversation's content, and those merged into it (a new
    near-duplicate rewrites its list of duplicates); without any, the key it always had."""
    if not merged:
        return source_key(layer, s.content_hash, version)
    return source_key(layer, "+".join([s.content_hash, *sorted(d.summary.content_hash for d in merged)]),
                      version)


def plan(ctx, layer: str, scan: IngestResult, keys: set[str] | None = None, grouped=None) -> LayerPlan:
    """What to (re)build; with `keys`, only those partitions (nothing retired): a run of a few
    partitions reads their rows, not the whole layer's. `grouped`: `_groups` of this scan, when
    the caller has it already (fuzzy grouping reads texts)."""
    current = ctx.store.current_index(layer, keys)
    out = LayerPlan(layer, "merge")
    groups, merged = grouped or _groups(ctx, layer, scan)
    version = ctx.version(layer)
    for gk, items in sorted(groups.items()):
        if keys is not None and gk not in keys:
            continue
        s = items[0]
        key = _key(layer, s, merged.get(gk, []), version)
        ref = current.get(gk)
        if ref is not None and ref.materialization_key == key:
            out.cached.append(gk)
            continue
        reason = "new" if ref is None else "input changed"
        out.stale.append(WorkItem(gk, key, reason, est_calls=0, est_tokens_in=s.chars // 4))
        out.dates[gk] = s.created_at
        out.titles[gk] = s.title
    if keys is None and not scan.failed_files:  # a conversation whose file failed to parse is kept
        out.retire = _not_unreadable(ctx, layer, sorted(set(current) - set(groups)), scan)
    return out


def _not_unreadable(ctx, layer: str, gone: list[str], scan: IngestResult) -> list[str]:
    """The partitions of `gone` to retire: not those whose conversation the export still holds
    but could not read this time (skipped as damaged), which stay as built, like the
    conversations of a file that failed. A damaged entry whose id could not be found (`#3`)
    keeps every partition built from its file."""
    damaged = {(f, c) for f, c, why in scan.skipped if why != "empty conversation"}
    if not gone or not damaged:
        return gone
    unnamed = {f for f, c in damaged if c.startswith("#")}
    keep = set()
    for gk in gone:
        art = ctx.store.current(layer, gk)
        if art is None:
            continue
        path = art.metadata.get("meta.source.path")
        if path in unnamed or (path, art.metadata.get("meta.chat.conversation_id")) in damaged:
            keep.add(gk)
    return [gk for gk in gone if gk not in keep]


def build(ctx, layer: str, scan: IngestResult, keys: set[str] | None = None) -> LayerResult:
    groups, merged = _groups(ctx, layer, scan)
    p = plan(ctx, layer, scan, keys, (groups, merged))
    step = ctx.pipeline.steps[layer]
    result = LayerResult(layer)
    todo = [w for w in p.stale if keys is None or w.group_key in keys]
    work = {w.group_key: w for w in todo}
    built: dict[str, PartitionOutcome] = {}
    items = []
    # Streamed from the exports, stored a batch at a time: neither the parsed conversations nor
    # the texts of a large export ever all sit in memory.
    for gk, conv in ctx.reader.stream((w.group_key, groups[w.group_key][0]) for w in todo):
        items.append(_item(ctx, layer, step, work[gk], groups[gk][0], conv, merged.get(gk, [])))
        if len(items) == STORE_BATCH:
            _store(ctx, items, built)
            items = []
    if items:
        _store(ctx, items, built)
    result.outcomes.extend(built[w.group_key] for w in todo)  # in plan order, as before
    for gk in p.cached:
        if keys is None or gk in keys:
            result.outcomes.append(PartitionOutcome(gk, "cached"))
    if keys is None and p.retire:
        result.retired = ctx.store.retire(layer, p.retire)
    return result



def _item(ctx, layer: str, step, w, s, conv, merged: list[fuzzy.Duplicate]) -> dict:
    """The store item (put's keyword arguments) of one conversation's transcript."""
    text = conv.transcript()
    meta = {
        "meta.chat.conversation_id": conv.conversation_id,
        "meta.chat.title": conv.title or "",
        "meta.chat.message_count": conv.message_count,
        "meta.chat.message_range": [1, conv.message_count],
        # the design's per-message keys (§3.4), for a record that is a whole conversation: the
        # message it is current up to, and who opened the conversation
        "meta.chat.message_id": conv.messages[-1].message_id if conv.messages else None,
        "meta.chat.author": conv.messages[0].role if conv.messages else None,
        "meta.time.created_at": s.created_at,
        "meta.time.updated_at": s.updated_at,
        "meta.time.period": period_of(s.created_at, "month"),
        "meta.source.type": "live-session" if s.format == "live" else f"{s.format}-export",
        "meta.source.name": s.source,
        "meta.source.path": s.file,
        "meta.step.version_hash": ctx.version(layer),
    }
    # where a coding agent worked (project folder, repository, branch) and which session spawned it
    for k in ("dropped_branches", "model", "turn_ids", "session_version", "user_id",
              "cwd", "gitBranch", "repository", "project_hash", "parent_session"):
        if k in conv.metadata:
            meta[f"meta.custom.{k}"] = conv.metadata[k]
    if merged:  # provenance of the near-duplicates this transcript stands for (dedupe="fuzzy")
        meta["meta.custom.duplicates"] = [
            {"conversation_id": d.summary.conversation_id, "title": d.summary.title,
             "source": d.summary.source, "path": d.summary.file, "similarity": d.similarity}
            for d in merged]
    mode = step.config.get("pii")
    if mode == "redact":
        text, found = pii.redact(text)
        if found:
            meta["meta.custom.pii_redacted"] = found
    elif mode in ("flag", "detect") and (found := pii.summarise(text)):
        meta["meta.custom.pii"] = found
        if mode == "detect":
            meta["meta.custom.pii_findings"] = pii.locate(text)
    return {"layer": layer, "group_key": w.group_key, "content": text,
            "materialization_key": w.key, "level": 0, "metadata": meta, "run_id": ctx.run_id}


def _store(ctx, items: list[dict], built: dict) -> None:
    for art in ctx.store.put_many(items):
        built[art.group_key] = PartitionOutcome(
            art.group_key, "built", artifact_id=art.artifact_id, reason="parsed",
            content_hash=art.content_hash, preview=art.content[:600], input_count=1,
            provider="parser", model=art.metadata.get("meta.source.type", ""))
