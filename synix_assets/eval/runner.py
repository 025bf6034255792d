"""Run an eval: build each case through the project's pipeline, ask every question of the memory
and of the baselines, score, and record the run (results.py).

A "branch" is a project (a pipeline definition): `run_eval(bench, project=…, branch=…)` evaluates
that pipeline; comparing branches is running it per project and reading the results side by side.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from synix_assets.eval import attribution, metrics, workspace
from synix_assets.eval.data import TEMPORAL_CATEGORY, Benchmark
from synix_assets.eval.progress import Clock, Progress
from synix_assets.eval.report import PIPELINE_SYSTEMS, system_label
from synix_assets.eval.retrieval import MemoryRetriever, RawRag
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.project import ProjectPaths
from synix_resources.errors import EvalError
from synix_resources.fingerprints import sha256_text

SYSTEMS = ("memory", "raw-rag", "full-context", "core-only", "mem0")
# Systems that do not rank anything: a model answers from a fixed context (their "mode").
# full-context: every session in the prompt; core-only: the pipeline's context document alone
# (the compressed-log approach several memory systems take).
QA_ONLY = {"full-context": "full", "core-only": "core"}
MODES = ("fts", "semantic", "hybrid")


@dataclass
class EvalSettings:
    modes: tuple[str, ...] = ("hybrid",)
    systems: tuple[str, ...] = ("memory", "raw-rag")
    ks: tuple[int, ...] = metrics.KS
    qa: bool = False                 # answer + judge with the configured model
    qa_mode: str = "hybrid"          # the retrieval mode whose hits the QA answer reads
    llm_config: dict = field(default_factory=dict)   # the build's LLM (as `synix run`)
    qa_options: dict = field(default_factory=dict)   # make_client options of the QA model

    def to_json(self) -> dict:
        return {"modes": list(self.modes), "systems": list(self.systems), "ks": list(self.ks),
                "qa": self.qa, "qa_mode": self.qa_mode}


def pipeline_version(project: ProjectPaths) -> str:
    """A hash of every layer's version (prompt, model settings, config) and the projections."""
    pipeline = load_pipeline(project.pipeline_file)
    parts = [f"{layer}:{pipeline.version(layer)}" for layer in pipeline.layer_order()]
    parts += [f"{n}:{p.kind}:{getattr(p, 'from_', '')}" for n, p in sorted(pipeline.projections.items())]
    return sha256_text("\n".join(parts))[:16]


def builds_per_run(bench: Benchmark, settings: EvalSettings) -> int:
    """How many memories a run builds: one per case with questions, when a system reads one."""
    return len([c for c in bench.cases if c.questions]) if set(PIPELINE_SYSTEMS) & set(settings.systems) else 0


def run_eval(bench: Benchmark, *, project: ProjectPaths | None, branch: str,
             settings: EvalSettings, results_db: Path | None = None,
             progress: Callable[[Progress], None] | None = None, clock: Clock | None = None) -> dict:
    """Evaluate `project`'s pipeline (system "memory") and the baselines on `bench`.

    Returns {"run": {...}, "systems": {system: {mode: summary + by_category}}, "questions": [...]}
    and records it in `results_db` when given. `progress` gets the builds and questions as they
    go (progress.py); `clock`, instead, is one shared by several runs (`run_branches`).
    """
    from synix_assets.eval import qa as qa_mod

    clock = clock or Clock(builds_per_run(bench, settings), bench.questions, progress)
    clock.branch = project.branch if project else branch
    _refuse(settings, project)
    answerer = qa_mod.QA(bench.name, settings.qa_options, cache_path=project.llm_cache if project else None) \
        if settings.qa else None
    started = time.monotonic()
    total = bench.questions
    rows: list[dict] = []
    builds: list[dict] = []
    incremental: dict | None = None
    notices: dict[str, str] = {}
    tmp = tempfile.TemporaryDirectory(prefix="synix-eval-") if project is None else None
    scratch = Path(tmp.name) if tmp else None
    try:
        for c_index, case in enumerate(bench.cases):
            if not case.questions:
                continue
            retrievers = {}
            survival = None
            context_doc = ""
            session_dates = {s.session_id: s.date for s in case.sessions}
            folder = workspace.case_folder(project, bench.name, case.case_id) if project else scratch
            folder.mkdir(parents=True, exist_ok=True)
            label = f"{case.case_id} (case {c_index + 1}/{len(bench.cases)})"
            t0 = time.monotonic()
            if set(PIPELINE_SYSTEMS) & set(settings.systems):
                clock.tell("build", f"{label} through the pipeline")
                paths = workspace.prepare(project, bench.name, case)
                builds.append(_build(paths, case.case_id, settings, clock.layer_listener(case.case_id)))
                if incremental is None:
                    incremental = measure_incremental(paths, builds[-1], settings)
                if "memory" in settings.systems:
                    retrievers["memory"] = MemoryRetriever(case, paths.search, paths.store)
                    survival = attribution.Survival(case, retrievers["memory"].store)
                doc = workspace.context_doc_path(paths)
                context_doc = doc.read_text(encoding="utf-8") if doc and doc.exists() else ""
                if "core-only" in settings.systems and not context_doc.strip():
                    raise EvalError(f"core-only answers from the pipeline's context document, and "
                                    f"{project.pipeline_file} built none for {case.case_id}",
                                    hint='add pipeline.context_doc("context", from_=["core"], path="context.md")')
            if "raw-rag" in settings.systems:
                retrievers["raw-rag"] = RawRag(case, folder / "raw-rag.sqlite",
                                               embeddings="auto" if set(settings.modes) - {"fts"} else False,
                                               vector_cache=workspace.vector_cache(project) if project else None)
            if "mem0" in settings.systems:
                from synix_assets.eval.mem0_system import Mem0Retriever

                clock.tell("build", f"{case.case_id} (case {c_index + 1}/{len(bench.cases)}) into mem0 "
                                    "(a model call per 2 turns)")
                home = workspace.bench_folder(project, bench.name).parent if project else scratch
                retrievers["mem0"] = Mem0Retriever(case, folder / "mem0", home / "mem0-home",
                                                   settings.qa_options.get("env"))
            if set(PIPELINE_SYSTEMS) & set(settings.systems):  # the baselines' indexes count as its build
                clock.build_done(time.monotonic() - t0, f"{label}: {builds[-1].get('llm_calls', 0)} LLM calls"
                                 + (", nothing changed" if builds[-1]["noop"] else ""))
            try:
                for q in case.questions:
                    asked = time.monotonic()
                    for system, retriever in retrievers.items():
                        for mode in settings.modes if system != "mem0" else ("mem0",):
                            ranking, notice = retriever.rank(q.text, mode, depth=max(settings.ks))
                            if notice:
                                notices[f"{system}/{mode}"] = notice
                            row = _row(bench, case.case_id, q, system, mode, ranking, settings.ks)
                            row["fresh"] = metrics.freshness(q.evidence_sessions, ranking.sessions,
                                                             session_dates, max(settings.ks))
                            if survival is not None and system == "memory" \
                                    and row["scores"]["turn"][f"all@{max(settings.ks)}"] < 1:
                                row["attribution"] = survival.explain(q.evidence_turns, row["turns"])
                            if answerer is not None and mode in (settings.qa_mode, "mem0"):
                                row["qa"] = answerer.answer_and_judge(
                                    q, ranking.passages, context_doc if system == "memory" else "")
                            rows.append(row)
                    for system, mode in QA_ONLY.items():
                        if answerer is None or system not in settings.systems:
                            continue
                        row = _row(bench, case.case_id, q, system, mode, None, settings.ks)
                        passages = qa_mod.full_context(case) if system == "full-context" else []
                        row["qa"] = answerer.answer_and_judge(q, passages, context_doc if system == "core-only" else "")
                        rows.append(row)
                    clock.questions_asked(1, time.monotonic() - asked)
            finally:
                for r in retrievers.values():
                    r.close()
    finally:
        if answerer is not None:
            answerer.close()
        if tmp is not None:
            tmp.cleanup()
    measured_pipeline = bool(set(PIPELINE_SYSTEMS) & set(settings.systems))
    run = {"benchmark": bench.name, "variant": bench.variant, "branch": branch,
           "pipeline_version": pipeline_version(project) if project and measured_pipeline else None,
           "project": str(project.root) if project else None,
           "data_file": bench.path, "data_hash": bench.data_hash, "settings": settings.to_json(),
           "questions": total, "skipped_questions": bench.skipped_questions,
           "dropped_evidence_ids": bench.dropped_evidence_ids,
           "cases": len([c for c in bench.cases if c.questions]),
           "seconds": round(time.monotonic() - started, 3), "builds": builds,
           "build_llm_calls": sum(b.get("llm_calls", 0) for b in builds),
           "build_seconds": round(sum(b["seconds"] for b in builds), 3),
           "build_run_ids": [b["built_by"] for b in builds], "incremental": incremental,
           "incremental_speedup": incremental["speedup"] if incremental else None,
           "qa_note": None if settings.qa else qa_mod.OFFLINE_NOTE, "notices": notices}
    if answerer is not None:
        run["qa_model"] = answerer.identity
        run["qa_protocol"] = answerer.protocol
    result = {"run": run, "systems": summarise_rows(rows, settings.ks), "questions": rows}
    if results_db is not None:
        from synix_assets.eval.results import ResultsStore

        with ResultsStore(results_db) as store:
            result["run"]["run_id"] = store.record(result)
    return result


def _refuse(settings: EvalSettings, project: ProjectPaths | None) -> None:
    """Stop before any work when a system cannot be measured as asked."""
    for system in PIPELINE_SYSTEMS:
        if system in settings.systems and project is None:
            raise EvalError(f"evaluating {'the memory' if system == 'memory' else system} needs a project "
                            "(its pipeline.py)", hint="run inside a Synix project or pass -p DIR; or use "
                            "--no-memory with --baseline raw-rag/full-context")
    reads = {"full-context": "answers from the whole conversation",
             "core-only": "answers from the pipeline's context document alone"}
    for system in QA_ONLY:
        if system in settings.systems and not settings.qa:
            raise EvalError(f"the {system} baseline {reads[system]}, so it needs a model",
                            hint="configure a model (ANTHROPIC_API_KEY or SYNIX_LLM_PROVIDER) and pass --qa")
    if "mem0" in settings.systems:
        from synix_assets.eval.mem0_system import require

        require(settings.qa_options.get("env"))


def _build(paths, case_id: str, settings: EvalSettings, progress=None) -> dict:
    """Build the case's scratch project; what it cost and which build it was (its Synix run id
    and store), so every figure can be traced to the memory that produced it."""
    t0 = time.monotonic()
    report = workspace.build(paths, llm_config=settings.llm_config, progress=progress)
    seconds = round(time.monotonic() - t0, 3)
    return {"case": case_id, "seconds": seconds, "run_id": report.run_id,
            "built_by": report.run_id if not report.noop else _last_completed_run(paths),
            "store": str(paths.store), "status": report.status,
            **{k: v for k, v in report.to_json().items()
               if k in ("llm_calls", "tokens_in", "tokens_out", "cost_usd", "layers")},
            "noop": report.noop}


def _last_completed_run(paths) -> str | None:
    """The store's run that built the memory a no-op build found current (a no-op records no
    run of its own)."""
    store = paths.open_store()
    try:
        return next((r.run_id for r in store.list_runs(limit=50) if r.status == "completed"), None)
    finally:
        store.close()


def measure_incremental(paths, first: dict, settings: EvalSettings) -> dict:
    """The design's incremental speedup (000 §9.5, "re-run / full run time", target < 0.1x),
    measured: a second build of the same scratch project with nothing changed, timed against
    the first build of this run. The first build may itself have been answered from the
    response cache or found nothing to do (`first_noop`); both times are recorded."""
    again = _build(paths, first["case"], settings)
    speedup = round(again["seconds"] / first["seconds"], 4) if first["seconds"] else None
    return {"case": first["case"], "first_build_s": first["seconds"], "first_run_id": first["run_id"],
            "first_noop": first["noop"], "first_llm_calls": first.get("llm_calls", 0),
            "rebuild_s": again["seconds"], "rebuild_run_id": again["run_id"],
            "rebuild_llm_calls": again.get("llm_calls", 0), "rebuild_noop": again["noop"],
            "memory_run_id": first["built_by"], "store": first["store"], "speedup": speedup}


def run_branches(bench: Benchmark, branches: list[tuple[str, ProjectPaths]], *,
                 settings: EvalSettings, results_db: Path | None = None,
                 progress: Callable[[Progress], None] | None = None) -> list[dict]:
    """Evaluate several branches' pipelines on the same questions, one recorded run each.

    The baselines do not depend on the pipeline, so they are measured once, with the first
    branch. Progress counts the builds and questions of every branch, so its ETA covers the
    whole call; each line names the branch being built (`ProjectPaths.branch`), not the name
    its results carry.
    """
    plans = []
    for i, (name, project) in enumerate(branches):
        systems = settings.systems if i == 0 else tuple(s for s in settings.systems if s in PIPELINE_SYSTEMS)
        if systems:
            plans.append((name, project, dataclasses.replace(settings, systems=systems)))
    clock = Clock(sum(builds_per_run(bench, s) for _, _, s in plans), bench.questions * len(plans), progress)
    return [run_eval(bench, project=project, branch=name, settings=s, results_db=results_db, clock=clock)
            for name, project, s in plans]


def combined(results: list[dict]) -> dict:
    """{system: {mode: summary}} of several runs side by side (names: `system_label`)."""
    out: dict = {}
    for result in results:
        for system, modes in result["systems"].items():
            out[system_label(system, result["run"]["branch"])] = modes
    return out


def summarise_rows(rows: Iterable[dict], ks: Iterable[int] = metrics.KS) -> dict:
    """{system: {mode: summary + by_category}} from per-question rows."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["system"], r["mode"]), []).append(r)
    out: dict = {}
    for (system, mode), rs in groups.items():
        entry = metrics.summarise(rs, ks)
        entry["by_category"] = metrics.summarise_by_category(rs, ks)
        if system == "memory":  # where the misses' evidence was lost (attribution.py)
            entry["attribution"] = attribution.summarise(rs)
            for category, summary in entry["by_category"].items():
                summary["attribution"] = attribution.summarise([r for r in rs if r["category"] == category])
        out.setdefault(system, {})[mode] = entry
    return out


def _row(bench: Benchmark, case_id: str, q, system: str, mode: str, ranking, ks) -> dict:
    row = {"question_id": q.question_id, "case": case_id, "category": q.category, "system": system,
           "mode": mode, "question": q.text, "temporal": q.category == TEMPORAL_CATEGORY.get(bench.name)}
    if ranking is None:
        row.update(scores=None, ms=0.0)
        return row
    row.update(
        scores={"session": metrics.question_scores(q.evidence_sessions, ranking.sessions, ks),
                "turn": metrics.question_scores(q.evidence_turns, ranking.turns, ks)},
        ms=round(ranking.ms, 3), layers=ranking.layers[:max(ks)],
        hits_checked=ranking.hits_checked, hits_complete=ranking.hits_complete,
        sessions=ranking.sessions[:max(ks)], turns=ranking.turns[:max(ks)])
    return row
