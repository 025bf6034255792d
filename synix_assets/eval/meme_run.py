"""Running the generated MEME-style benchmark (eval/meme.py): build the world's conversations
through the normal build, answer the phase-1 probes, `forget` the chosen conversations (each
forget rebuilds, as `synix forget` does), answer the phase-2 probes; raw RAG answers the same
probes over the same conversations (phase 2: without the forgotten ones). Returns per-task
accuracy for both, and every probe with both answers."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from synix_assets.eval import meme
from synix_assets.eval.retrieval import RawRag
from synix_assets.eval.source import write_export
from synix_assets.engine.temporal import entity_key, rule_statements
from synix_assets.pipeline.fact_rules import parse_rules
from synix_assets.project import ProjectPaths
from synix_resources.errors import EvalError

def scratch_dir(project: ProjectPaths, seed: int) -> Path:
    """Where a project's run of a seed builds (each branch its own, as every eval)."""
    from synix_assets.eval.workspace import bench_folder

    return bench_folder(project, "meme") / f"seed-{seed}"


MARK = ".synix-meme-scratch"


def fresh_memory(workdir: Path) -> Path:
    """An empty `workdir/memory`: a run starts from nothing, since the last run's forget left
    tombstones there that would keep the forgotten conversations out of the next build. Only a
    folder this runner made (its mark inside) is ever removed."""
    root = workdir / "memory"
    if root.exists():
        if not (root / MARK).is_file():
            raise EvalError(f"{root} exists and was not made by `synix eval meme`",
                            hint="give --dir a new or empty folder")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / MARK).write_text("made by synix eval meme; removed and rebuilt by each run\n", encoding="utf-8")
    return root


BUDGET = 4000  # the brief's tokens: Tier 2 gets at least a quarter of them


def memory_answer(svc, probe: dict) -> str:
    """The brief's answer: the Tier 2 fact valid then for the probe's subject and attribute."""
    out = svc.brief(meme.question(probe), budget_tokens=BUDGET, hits=3, recent=1, as_of=probe["as_of"])
    want = entity_key(probe["subject"])
    for f in (out.get("tier2") or {}).get("facts", []):
        if entity_key(f["subject"]) == want and f["attribute"] == probe["attribute"]:
            return f["value"]
    return meme.NOT_KNOWN


def rag_answer(rag: RawRag, probe: dict, rules) -> str:
    """Raw RAG: the best-ranked retrieved turn stating the probe's fact (or its rule's premise),
    read by the same rules; search knows no time, so `as_of` is only in the question's words."""
    ranking, _ = rag.rank(meme.question(probe), "fts", depth=10)
    want = entity_key(probe["subject"])
    for i, text in enumerate(ranking.passages):
        speaker, _, said = text.partition(": ")
        for st in rule_statements({"turn_id": str(i), "ts": "", "role": "user", "content": said}):
            if entity_key(st["subject"]) != want or st["op"] == "end":
                continue
            if st["attribute"] == probe["attribute"]:
                return st["value"]
            for r in rules:
                if (r.then_attribute == probe["attribute"] and st["attribute"] == r.attribute
                        and st["value"].casefold() == r.value.casefold()):
                    return r.then_value
    return meme.NOT_KNOWN


def run_meme(workdir: Path, *, seed: int = 7, people: int = 6, projects: int = 3, sessions: int = 30,
             unseen: float = 0.0, progress=lambda line: None) -> dict:
    """Generate, build, probe, forget, probe. The memory is the scratch project `workdir/memory`;
    raw RAG's indexes and the probes stay beside it, outside the project, since forget checks
    that no file of the project still holds a forgotten conversation's text."""
    from synix_assets.app.forget import forget
    from synix_assets.app.memory import MemoryService
    from synix_assets.app.run import run_build

    world = meme.generate(seed, people=people, projects=projects, sessions=sessions, unseen=unseen)
    root = fresh_memory(workdir)
    write_export(world.case(), root / "exports" / "sessions.json")
    (root / "pipeline.py").write_text(meme.pipeline_source(world.rules), encoding="utf-8")
    meme.probe_path(workdir).write_text(json.dumps(world.probes, indent=1), encoding="utf-8")
    paths = ProjectPaths(root)
    rules = parse_rules("facts", world.rules)
    started = time.monotonic()
    progress(f"meme seed {seed}: {len(world.sessions)} conversations, {len(world.probes)} probes; building")
    report = run_build(paths)
    build_s = time.monotonic() - started
    answers: dict[str, dict[str, str]] = {"memory": {}, "raw-rag": {}}
    phases = (("before", ()), ("after", tuple(world.forget)))
    forget_s = 0.0
    for phase, gone in phases:
        if gone:
            progress(f"forgetting {len(gone)} conversations")
            t0 = time.monotonic()
            for cid in world.conversations_forgotten():
                forget(paths, cid)
            forget_s = time.monotonic() - t0
        asked = [p for p in world.probes if p["phase"] == phase]
        svc = MemoryService(paths)
        rag = RawRag(world.case(without=gone), workdir / f"raw-rag-{phase}.db", embeddings=False)
        try:
            for p in asked:
                answers["memory"][p["id"]] = memory_answer(svc, p)
                answers["raw-rag"][p["id"]] = rag_answer(rag, p, rules)
        finally:
            svc.close()
            rag.close()
    scores = {system: meme.score(a, world.probes) for system, a in answers.items()}
    per_probe = [dict(p, memory=answers["memory"][p["id"]], raw_rag=answers["raw-rag"][p["id"]])
                 for p in world.probes]
    return {"benchmark": "meme", "seed": seed, "unseen": unseen, "conversations": len(world.sessions),
            "forgotten": world.conversations_forgotten(), "probes": len(world.probes), "rules": world.rules,
            "scores": scores, "per_probe": per_probe, "build_seconds": round(build_s, 1),
            "forget_seconds": round(forget_s, 1), "build_ok": not getattr(report, "failed", False)}
