"""Retrieval metrics over ranked ids, and their aggregation per category.

Per question and k: `recall_any@k` (an evidence id is in the top k: LoCoMo's hit@k, what
`session_recall@k` / `turn_recall@k` have always meant here), `recall_all@k` (every evidence id
is) and `ndcg_any@k` (LongMemEval's `eval_utils.py`: binary relevance, DCG of the top k over the
DCG of the ideal ranking that puts min(k, |evidence|) evidence ids first).
"""
from __future__ import annotations

import math
from typing import Iterable

KS = (1, 5, 10)
LEVELS = ("session", "turn")


def dcg(relevances: list[int]) -> float:
    return sum(rel / math.log2(i + 2) for i, rel in enumerate(relevances))


def question_scores(gold: Iterable[str], ranked: list[str], ks: Iterable[int]) -> dict:
    gold = set(gold)
    out = {}
    for k in ks:
        top = ranked[:k]
        found = gold & set(top)
        out[f"any@{k}"] = 1.0 if found else 0.0
        out[f"all@{k}"] = 1.0 if gold and found == gold else 0.0
        ideal = dcg([1] * min(k, len(gold)))
        out[f"ndcg@{k}"] = round(dcg([1 if r in gold else 0 for r in top]) / ideal, 6) if ideal else 0.0
    return out


def freshness(gold: Iterable[str], ranked: list[str], dates: dict[str, str | None], k: int) -> float | None:
    """Memory freshness (design §9.2) for a question whose evidence spans sessions of different
    dates (knowledge updates, temporal questions): 1.0 when the newest evidence session is in
    the top k and ahead of every older one, else 0.0; None when it does not apply."""
    dated = sorted({(dates.get(g) or "", g) for g in gold if dates.get(g)})
    if len(dated) < 2 or dated[0][0] == dated[-1][0]:
        return None
    newest = dated[-1][1]
    top = ranked[:k]
    if newest not in top:
        return 0.0
    at = top.index(newest)
    return 1.0 if all(g not in top[:at] for _, g in dated[:-1]) else 0.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarise(rows: list[dict], ks: Iterable[int] = KS) -> dict:
    """Mean metrics of per-question rows (each with `scores[level][metric@k]`, `ms`, `layers`,
    `complete`, optional `qa`). Names: `session_recall@5` (= recall_any), `session_recall_all@5`,
    `session_ndcg@5`, same for `turn_`; latency p50/p95; altitude and provenance figures."""
    out: dict = {"questions": len(rows)}
    scored = [r for r in rows if r.get("scores")]  # full-context answers without retrieving
    n = len(scored)
    for level in LEVELS:
        for k in ks:
            for metric, name in (("any", "recall"), ("all", "recall_all"), ("ndcg", "ndcg")):
                vals = [r["scores"][level][f"{metric}@{k}"] for r in scored]
                out[f"{level}_{name}@{k}"] = round(sum(vals) / n, 4) if n else None
    ms = [r["ms"] for r in scored]
    out["p50_ms"] = round(percentile(ms, 50), 2)
    out["p95_ms"] = round(percentile(ms, 95), 2)
    top1: dict[str, int] = {}
    topk: dict[str, int] = {}
    for r in rows:
        layers = r.get("layers") or []
        if layers:
            top1[layers[0]] = top1.get(layers[0], 0) + 1
        for layer in layers:
            topk[layer] = topk.get(layer, 0) + 1
    out["altitude_top1"] = dict(sorted(top1.items()))
    out["altitude_top10"] = dict(sorted(topk.items()))
    hits = sum(r.get("hits_checked", 0) for r in rows)
    out["provenance_complete"] = round(sum(r.get("hits_complete", 0) for r in rows) / hits, 4) if hits else None
    fresh = [r["fresh"] for r in scored if r.get("fresh") is not None]
    out["freshness"] = round(sum(fresh) / len(fresh), 4) if fresh else None
    out["freshness_questions"] = len(fresh)
    qa = [r["qa"] for r in rows if r.get("qa")]
    if qa:
        out["qa_accuracy"] = _accuracy(qa)
        out["qa_f1"] = round(sum(x.get("f1", 0.0) for x in qa) / len(qa), 4)
        out["tokens_per_question"] = round(sum(x["tokens_in"] + x["tokens_out"] for x in qa) / len(qa), 1)
        out["usd_per_question"] = round(sum(x["cost_usd"] for x in qa) / len(qa), 6)
    out.update(design_names(out, rows))
    return out


def _accuracy(qa: list[dict]) -> float:
    return round(sum(1 for x in qa if x["correct"]) / len(qa), 4)


DESIGN_METRICS = ("precision@5", "temporal_accuracy", "memory_freshness", "provenance_completeness")


def design_names(summary: dict, rows: list[dict]) -> dict:
    """The design's metric names (000 §9.5) for figures we measure under our own names.

    precision@5 ("top 5 retrieval accuracy") is session_recall@5; memory freshness and
    provenance completeness are `freshness` and `provenance_complete`. Temporal accuracy is
    measured on the benchmark's temporal category (rows marked `temporal`): the QA accuracy
    there when a model answered, else its session recall@5 (`temporal_accuracy_basis` says
    which). Incremental speedup is a property of the build, so it is in the run
    (runner.incremental), not here.
    """
    temporal = [r for r in rows if r.get("temporal")]
    scored = [r for r in temporal if r.get("scores")]
    recall = round(sum(r["scores"]["session"]["any@5"] for r in scored) / len(scored), 4) \
        if scored and "any@5" in scored[0]["scores"]["session"] else None
    qa = [r["qa"] for r in temporal if r.get("qa")]
    out = {"precision@5": summary.get("session_recall@5"), "temporal_recall@5": recall,
           "temporal_qa_accuracy": _accuracy(qa) if qa else None, "temporal_questions": len(temporal),
           "memory_freshness": summary.get("freshness"),
           "provenance_completeness": summary.get("provenance_complete")}
    out["temporal_accuracy"] = out["temporal_qa_accuracy"] if qa else recall
    out["temporal_accuracy_basis"] = "qa_accuracy" if qa else ("session_recall@5" if recall is not None else None)
    return out


def summarise_by_category(rows: list[dict], ks: Iterable[int] = KS) -> dict:
    cats: dict[str, list[dict]] = {}
    for r in rows:
        cats.setdefault(r["category"], []).append(r)
    return {c: summarise(rs, ks) for c, rs in sorted(cats.items())}
