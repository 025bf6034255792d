"""SynixBench: altitude questions over the bundled demo corpus (design 000 §9.3, Part IX).

The demo exports are built through the project's pipeline in a scratch workspace (as every
eval is), then each question of the versioned set (`synixbench_v1.json`) is scored three ways:

1. found — the memory answers at the requested altitude (level 1 episode, 2 rollup, 3 core;
   0 = a verbatim phrase in a raw transcript, "leaf bypass"), with a hit that derives from an
   expected source conversation; provenance questions take the top hit at any altitude.
2. fits — the answer suits its altitude: an episode covers one conversation and has the detail
   terms; a rollup or core covers several conversations, has the terms, and is shorter than what
   it summarises; a leaf-bypass hit holds the phrase verbatim; an emergent fact (terms from
   different conversations) is in no single episode, only above them; a provenance question's
   drill-down reaches a turn of the expected conversation first.
3. provenance — the hit's lineage in the artifact store reaches the expected conversations
   (all of them for emergent facts), only real demo conversations, and exactly the leaves the
   index credits it with.
"""
from __future__ import annotations

import json
from pathlib import Path

from synix_assets.eval import workspace
from synix_assets.eval.data import file_hash
from synix_assets.project import ProjectPaths
from synix_resources.search.index import SearchIndex
from synix_resources.store.artifact_store import ArtifactStore

QUESTIONS = Path(__file__).with_name("synixbench_v1.json")
DEMO = Path(__file__).resolve().parents[1] / "demo"
SCORES = ("found_at_altitude", "fits_altitude", "provenance_ok")


class _Memory:
    def __init__(self, paths):
        self.index = SearchIndex(paths.search, embeddings="auto")
        self.store = ArtifactStore(paths.store)
        self.levels: dict[int, list[str]] = {}
        for layer, level in self.index.db.execute("SELECT DISTINCT layer, level FROM docs"):
            self.levels.setdefault(int(level), []).append(layer)
        self.mode = "hybrid" if self.index.vectors.has_vectors() else "fts"
        self._leaves: dict[str, list] = {}

    def leaves(self, artifact_id: str) -> list:
        if artifact_id not in self._leaves:
            self._leaves[artifact_id] = self.store.leaves(artifact_id, max_depth=32, max_count=100_000)
        return self._leaves[artifact_id]

    def titles(self, artifact_id: str) -> set[str]:
        return {a.metadata.get("meta.chat.title", "") for a in self.leaves(artifact_id)}

    def lineage_ok(self, hit, sources: set[str], *, every: bool) -> bool:
        leaves = self.leaves(hit.artifact_id)
        titles = {a.metadata.get("meta.chat.title", "") for a in leaves}
        real = all(a.metadata.get("meta.source.name") for a in leaves) and bool(leaves)
        reached = sources <= titles if every else bool(sources & titles)
        return real and reached and {a.artifact_id for a in leaves} == set(hit.provenance)

    def close(self) -> None:
        self.index.close()
        self.store.close()


def _has_terms(text: str, terms: list[str]) -> bool:
    low = text.casefold()
    return all(t.casefold() in low for t in terms)


def score_question(mem: _Memory, q: dict) -> dict:
    sources = set(q["sources"])
    out = {"id": q["id"], "kind": q["kind"], "altitude": "any" if q["altitude"] is None else str(q["altitude"]),
           "hit": None, "layer": None, **{k: False for k in SCORES}}
    if q["kind"] == "leaf-bypass":
        hits = mem.index.search(q["query"], exact=True, limit=5)
        hit = next((h for h in hits if mem.titles(h.artifact_id) & sources), None)
        if hit is not None:
            out["found_at_altitude"] = hit.level == 0
            out["fits_altitude"] = q["query"].casefold() in hit.content.casefold()
            out["provenance_ok"] = mem.lineage_ok(hit, sources, every=True)
    elif q["kind"] == "provenance":
        hits = mem.index.search(q["query"], mode=mem.mode, limit=5)
        hit = hits[0] if hits else None
        if hit is not None:
            out["found_at_altitude"] = bool(mem.titles(hit.artifact_id) & sources)
            under = [u for u in mem.index.drill_down(hit.artifact_id, q["query"], mode=mem.mode, limit=10,
                                                     per="passage") if u.message_ids]
            first = under[0] if under else (hit if hit.message_ids else None)
            out["fits_altitude"] = first is not None and bool(mem.titles(first.artifact_id) & sources)
            out["provenance_ok"] = mem.lineage_ok(hit, sources, every=True)
    else:
        level = int(q["altitude"])
        layers = mem.levels.get(level, [])
        hits = mem.index.search(q["query"], layers=layers, mode=mem.mode, limit=3) if layers else []
        hit = next((h for h in hits if mem.titles(h.artifact_id) & sources), None)
        if hit is not None:
            out["found_at_altitude"] = True
            covered = mem.leaves(hit.artifact_id)
            if level <= 1:
                fits = len(covered) == 1 and _has_terms(hit.content, q["terms"])
            else:
                fits = len(covered) >= 2 and _has_terms(hit.content, q["terms"]) and \
                    len(hit.content) < sum(len(a.content) for a in covered)
            if q["kind"] == "emergent":  # the combination is in no single episode, only above them
                episodes = [a for layer in mem.levels.get(1, []) for a in mem.store.list_layer(layer)]
                fits = fits and not any(_has_terms(a.content, q["terms"]) for a in episodes)
            out["fits_altitude"] = fits
            out["provenance_ok"] = mem.lineage_ok(hit, sources, every=q["kind"] == "emergent")
    if hit is not None:
        out["hit"], out["layer"] = hit.artifact_id, hit.layer
    return out


def _mean(rows: list[dict], key: str) -> float:
    return round(sum(1 for r in rows if r[key]) / len(rows), 4) if rows else 0.0


def run_synixbench(project: ProjectPaths, *, branch: str, results_db: Path | None = None,
                   questions: Path = QUESTIONS, llm_config: dict | None = None,
                   embeddings: bool = True) -> dict:
    spec = json.loads(Path(questions).read_text(encoding="utf-8"))
    paths = workspace.scratch_project(project, workspace.bench_folder(project, "synixbench"), DEMO,
                                      embeddings=embeddings)
    report = workspace.build(paths, llm_config=llm_config)
    mem = _Memory(paths)
    try:
        rows = [score_question(mem, q) for q in spec["questions"]]
    finally:
        mem.close()
    scores = {k: _mean(rows, k) for k in SCORES}
    by_kind = {kind: {"questions": len(rs), **{k: _mean(rs, k) for k in SCORES}}
               for kind in dict.fromkeys(r["kind"] for r in rows)
               for rs in [[r for r in rows if r["kind"] == kind]]}
    result = {"version": spec["version"], "branch": branch, "questions": len(rows), "scores": scores,
              "by_kind": by_kind, "per_question": rows, "mode": mem.mode,
              "build_llm_calls": report.to_json()["llm_calls"]}
    if results_db is not None:
        from synix_assets.eval.results import ResultsStore
        from synix_assets.eval.runner import pipeline_version

        summary = {"questions": len(rows), **scores, "by_category": by_kind}
        record = {"run": {"benchmark": "synixbench", "variant": spec["version"], "branch": branch,
                          "pipeline_version": pipeline_version(project), "project": str(project.root),
                          "data_file": str(questions), "data_hash": file_hash(Path(questions)),
                          "settings": {"mode": mem.mode}, "questions": len(rows),
                          "build_llm_calls": result["build_llm_calls"], "qa_note": None},
                  "systems": {"memory": {mem.mode: summary}},
                  "questions": [{"question_id": r["id"], "case": "demo", "category": r["kind"],
                                 "system": "memory", "mode": mem.mode, **r} for r in rows]}
        with ResultsStore(results_db) as store:
            result["run_id"] = store.record(record)
    return result
