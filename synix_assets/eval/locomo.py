"""LoCoMo evidence-recall benchmark for the search index (export-formats.md §3.4).

Each LoCoMo session becomes one transcript `IndexDoc` with its turns as messages (the same
message-by-message indexing users get for their transcripts), synced through `SearchIndex.sync`
into one index per conversation. For every question of categories 1–4 with valid evidence we
search with the question text and score recall_any@k: did any evidence session (artifact-level
search) / any evidence turn (`per="passage"` search) land in the top k.
"""
from __future__ import annotations

import json
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Iterable

import numpy as np

from synix_resources.errors import ExportFormatError
from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex

CATEGORIES = ("1", "2", "3", "4")
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D(\d+):0*(\d+)$")


def _session_date(raw: str | None) -> str | None:
    if not raw:
        return None
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def _turn_text(turn: dict) -> str:
    text = str(turn.get("text") or "")
    if turn.get("blip_caption"):
        text += f" [shares photo: {turn['blip_caption']}]"
    return text


def session_docs(sample: dict) -> list[IndexDoc]:
    """One transcript document per session (iterating `session_<N>` keys, not date keys)."""
    conv = sample["conversation"]
    sample_id = str(sample.get("sample_id", "conv"))
    docs = []
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    for n in numbers:
        turns = conv[f"session_{n}"]
        if not isinstance(turns, list) or not turns:
            continue
        date = _session_date(conv.get(f"session_{n}_date_time"))
        messages = tuple({"index": i, "id": str(t.get("dia_id", f"D{n}:{i + 1}")),
                          "speaker": str(t.get("speaker", "")), "text": _turn_text(t)}
                         for i, t in enumerate(turns))
        content = "\n".join(f"{m['speaker']}: {m['text']}" for m in messages)
        docs.append(IndexDoc(
            artifact_id=f"{sample_id}/session_{n}", layer="transcripts", level=0,
            content=content, content_hash=content_hash(content), title="", date=date,
            source="locomo", metadata={"session": n},
            sources=({"conversation_id": sample_id, "title": f"session {n}", "date": date,
                      "message_range": [0, len(messages) - 1]},),
            messages=messages))
    return docs


def normalise_evidence(raw: Iterable, valid: set[str]) -> tuple[list[str], int]:
    """Split on ';' and whitespace, parse D<s>:<t> (leading zeros dropped), keep ids that exist.
    Returns (ids, number dropped)."""
    ids, dropped = [], 0
    for item in raw or []:
        for part in re.split(r"[;\s]+", str(item)):
            if not part:
                continue
            m = _DIA_ID.match(part)
            dia = f"D{int(m.group(1))}:{int(m.group(2))}" if m else None
            if dia in valid:
                if dia not in ids:
                    ids.append(dia)
            else:
                dropped += 1
    return ids, dropped


def _load(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise ExportFormatError(f"{path}: no such file" if not path.exists()
                                else f"{path}: is not a file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportFormatError(f"{path}: not a readable LoCoMo JSON file ({exc})") from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(s, dict) and isinstance(s.get("conversation"), dict)
                                             for s in data):
        raise ExportFormatError(f"{path}: not LoCoMo data — expected a list of samples "
                                "with 'conversation' and 'qa'")
    return data


def _empty_counts(ks) -> dict:
    return {"n": 0, **{f"session_{k}": 0 for k in ks}, **{f"turn_{k}": 0 for k in ks}}


def _rates(counts: dict, ks) -> dict:
    n = counts["n"]
    out = {"questions": n}
    for k in ks:
        out[f"session_recall@{k}"] = round(counts[f"session_{k}"] / n, 4) if n else None
    for k in ks:
        out[f"turn_recall@{k}"] = round(counts[f"turn_{k}"] / n, 4) if n else None
    return out


def run_locomo_eval(path: str | Path, *, modes: Iterable[str] = ("fts", "semantic", "hybrid"),
                    ks: Iterable[int] = (1, 5, 10), index_dir: str | Path | None = None,
                    conversations: Iterable[str] | None = None) -> dict:
    """Evidence recall_any@k (session and turn level) per category and overall, per mode.

    `index_dir` keeps the per-conversation index files (and their embeddings) for reuse;
    `conversations` limits the run to those sample ids.
    """
    modes, ks = tuple(modes), tuple(sorted(ks))
    depth = max(ks)
    samples = _load(path)
    if conversations is not None:
        wanted = set(conversations)
        samples = [s for s in samples if str(s.get("sample_id")) in wanted]
    tmp = None
    if index_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="synix-locomo-")
        index_dir = tmp.name
    index_dir = Path(index_dir)

    counts = {m: {"all": _empty_counts(ks), **{c: _empty_counts(ks) for c in CATEGORIES}}
              for m in modes}
    latencies = {m: [] for m in modes}
    notices = {}
    n_questions = dropped_ids = skipped = 0
    try:
        for sample in samples:
            docs = session_docs(sample)
            turn_session = {m["id"]: d.artifact_id for d in docs for m in d.messages}
            # An FTS-only run skips computing embeddings it would never use.
            index = SearchIndex(index_dir / f"{sample.get('sample_id', 'conv')}.sqlite",
                                embeddings="auto" if set(modes) - {"fts"} else False)
            index.sync("locomo", docs)
            for qa in sample.get("qa", []):
                category = str(qa.get("category"))
                if category not in CATEGORIES:
                    continue
                evidence, dropped = normalise_evidence(qa.get("evidence"), set(turn_session))
                dropped_ids += dropped
                question = str(qa.get("question") or "").strip()
                if not evidence or not question:
                    skipped += 1
                    continue
                n_questions += 1
                gold_turns = set(evidence)
                gold_sessions = {turn_session[e] for e in evidence}
                for mode in modes:
                    # Each mode pays for its own query embedding (hybrid would reuse semantic's).
                    index.clear_query_cache()
                    start = time.perf_counter()
                    sessions = index.search(question, mode=mode, limit=depth)
                    latencies[mode].append((time.perf_counter() - start) * 1000)
                    turns = index.search(question, mode=mode, limit=depth, per="passage")
                    if sessions.notice:
                        notices[mode] = sessions.notice
                    session_ids = [h.artifact_id for h in sessions]
                    turn_ids = [i for h in turns for i in h.message_ids]
                    for bucket in (counts[mode]["all"], counts[mode][category]):
                        bucket["n"] += 1
                        for k in ks:
                            bucket[f"session_{k}"] += bool(gold_sessions & set(session_ids[:k]))
                            bucket[f"turn_{k}"] += bool(gold_turns & set(turn_ids[:k]))
            index.close()
    finally:
        if tmp is not None:
            tmp.cleanup()

    result: dict = {"questions": n_questions, "skipped_questions": skipped,
                    "dropped_evidence_ids": dropped_ids,
                    "conversations": [str(s.get("sample_id")) for s in samples], "modes": {}}
    for mode in modes:
        lat = np.array(latencies[mode]) if latencies[mode] else np.array([0.0])
        entry = _rates(counts[mode]["all"], ks)
        entry.pop("questions")
        entry["p50_ms"] = round(float(np.percentile(lat, 50)), 2)
        entry["p95_ms"] = round(float(np.percentile(lat, 95)), 2)
        entry["by_category"] = {c: _rates(counts[mode][c], ks) for c in CATEGORIES}
        if mode in notices:
            entry["notice"] = notices[mode]
        result["modes"][mode] = entry
    return result
