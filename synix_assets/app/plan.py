"""`synix plan`: what a build would redo and why, with calls, tokens and dollars per layer.

The numbers come from the engine's own planners (`plan_all`), so the plan's call count is the
one the runner will make; tokens use measured per-layer averages when a layer has been built
before and the sources' sizes otherwise, priced with the one model price table.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from synix_assets.project import ProjectPaths
from synix_resources.errors import ExportFormatError

DEFAULT_OUT_TOKENS = 300


@dataclass
class LayerEstimate:
    layer: str
    kind: str
    level: int
    stale: int = 0
    cached: int = 0
    blocked: int = 0
    retire: int = 0
    failed: int = 0  # failure records still in force (their partition has yet to be built)
    # partitions built (or to be built) from what is there, without a failed or refused input
    # below (design §10.2): partition → what it lacks; the next build fills the gap
    partial: int = 0
    gaps: dict[str, list[str]] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    model: str = ""


@dataclass
class PlanReport:
    pipeline: str
    provider: str
    model: str
    layers: dict[str, LayerEstimate] = field(default_factory=dict)
    projections: dict[str, dict] = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    branch: str = "main"
    # What the whole memory of this architecture costs once this plan has run: the recorded
    # cost of every current artifact that stays, plus the estimate of what will be rebuilt.
    architecture: dict = field(default_factory=dict)
    compared_to_main: dict | None = None
    full: bool = False  # priced as `synix run --full`: every partition rebuilt
    created_at: str | None = None  # the pipeline's own `created_at`, when it declares one

    def total(self, key: str) -> float:
        return sum(getattr(l, key) for l in self.layers.values())

    @property
    def nothing_to_do(self) -> bool:
        return not any(l.stale or l.retire for l in self.layers.values()) and \
            not any(p["stale"] for p in self.projections.values())

    def to_json(self) -> dict:
        return {"pipeline": self.pipeline, "created_at": self.created_at, "branch": self.branch, "full": self.full, "provider": self.provider,
                "model": self.model, "architecture": self.architecture,
                "compared_to_main": self.compared_to_main,
                "layers": {k: asdict(v) for k, v in self.layers.items()},
                "projections": self.projections, "sources": self.sources,
                "source_names": list(self.sources.get("by_source", {})),
                "source_records": dict(self.sources.get("by_source", {})),
                "llm_calls": int(self.total("llm_calls")), "tokens_in": int(self.total("tokens_in")),
                "tokens_out": int(self.total("tokens_out")),
                "cost_usd": round(self.total("cost_usd"), 6), "nothing_to_do": self.nothing_to_do}


def require_exports(pipeline) -> None:
    """A clean error before a build that could only produce an empty memory."""
    from synix_assets.sources.reader import SourceReader

    if SourceReader(pipeline, None).files():
        return
    where = "; ".join(f"api source '{s.name}' has pulled nothing into {pipeline.resolve(s.path)} yet "
                      "(run `synix pull`, or let the pull sensor run)" if s.kind == "api"
                      else _why_empty(pipeline.resolve(s.path)) for s in pipeline.sources.values()
                      if s.kind != "live")
    raise ExportFormatError(where or "the pipeline has no export sources",
                            hint="copy a ChatGPT conversations.json or Claude export (.json/.zip/.jsonl) "
                                 "there or fix the path in pipeline.source(...), or run "
                                 "`synix init DIR --from EXPORT`")


def _why_empty(path: Path) -> str:
    """Why one export source gives no files, naming a file as a file and a folder as a folder
    (a path that is not there is a file when its name has a suffix: `file="conversations.json"`)."""
    if path.is_dir():
        return f"no export files in the folder {path}"
    if path.exists():  # a FIFO, socket or device: never read
        return f"{path} is not a regular file or folder"
    return f"the export {'file' if path.suffix else 'folder'} {path} does not exist"


def plan_client(llm_config: dict | None = None):
    """The client a build would use, built without needing its key: a plan sends nothing."""
    from synix_resources.llm.factory import quiet_client

    return quiet_client(**{**(llm_config or {}), "replay": True})


def _gap_names(store, plans):
    """`layer/group key` of a gap → `layer/partition` as Dagster and the failure lines show it."""
    keys = {m.partition("/")[2] for p in plans.values() for ms in p.partial.values() for m in ms}
    names = store.partition_names(keys) if keys else {}

    def readable(missing: str) -> str:
        layer, _, key = missing.partition("/")
        return f"{layer}/{names.get(key, key)}"
    return readable


def _architecture(store, plans, estimates) -> dict:
    total = {"llm_calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    for layer, plan in plans.items():
        stale = set(plan.stale_keys) | set(plan.retire)
        for group, (calls, tin, tout, cost) in store.current_costs(layer).items():
            if group not in stale:
                total["llm_calls"] += calls
                total["tokens_in"] += tin
                total["tokens_out"] += tout
                total["cost_usd"] += cost
        est = estimates[layer]
        total["llm_calls"] += est.llm_calls
        total["tokens_in"] += est.tokens_in
        total["tokens_out"] += est.tokens_out
        total["cost_usd"] += est.cost_usd
    total["cost_usd"] = round(total["cost_usd"], 6)
    return total


def _ratio(mine: dict, main: dict) -> dict:
    """How this architecture's cost compares with main's, in $ when both have a price, else in
    tokens, else in calls (offline providers cost nothing)."""
    for unit, key in (("cost_usd", "cost_usd"), ("tokens", None), ("llm_calls", "llm_calls")):
        a = mine[key] if key else mine["tokens_in"] + mine["tokens_out"]
        b = main[key] if key else main["tokens_in"] + main["tokens_out"]
        if a and b:
            return {"unit": unit, "ratio": round(a / b, 2), "main": main}
    return {"unit": "llm_calls", "ratio": None, "main": main}


def _as_full(ctx, plans: dict) -> None:
    """Plans priced as a full rebuild: every current partition is stale too, estimated at what
    its current artifact recorded (calls and tokens) when it was built."""
    from synix_assets.engine.outcomes import WorkItem

    for layer, plan in plans.items():
        costs = ctx.store.current_costs(layer)
        for group in plan.cached:
            calls, tin, _, _ = costs.get(group, (0, 0, 0, 0.0))
            plan.stale.append(WorkItem(group, None, "full rebuild", est_calls=calls, est_tokens_in=tin))
        plan.cached = []


def make_plan(paths: ProjectPaths, *, batch: bool = False, llm_config: dict | None = None,
              compare: bool = True, full: bool = False) -> PlanReport:
    from synix_assets.engine.context import BuildContext
    from synix_assets.engine.layers import plan_all
    from synix_assets.engine.projections import projection_stale
    from synix_assets.engine.upstream import avg_out_tokens
    from synix_resources.llm.pricing import estimate_cost

    pipeline = paths.load_pipeline()
    require_exports(pipeline)
    client = plan_client(llm_config)
    store = paths.open_store()
    try:
        ctx = BuildContext(pipeline, store, client, paths)
        scan = ctx.reader.scan()
        plans = plan_all(ctx, scan)
        if full:
            _as_full(ctx, plans)
        by_source = Counter(s.source for s in scan.summaries)
        report = PlanReport(pipeline.name, client.provider, client.model, full=full,
                            created_at=pipeline.created_at,
                            sources={"files": len(scan.files),
                                     "conversations": len(scan.summaries),
                                     "by_source": {name: by_source[name] for name in pipeline.sources},
                                     "failed_files": [{"file": f, "error": e} for f, e in scan.failed_files],
                                     "skipped": [{"file": f, "conversation_id": c, "reason": r}
                                                 for f, c, r in scan.skipped]})
        lapsed = set().union(*(p.lapsed for p in plans.values()))
        failed = Counter(f.layer for f in store.failures() if (f.layer, f.group_key) not in lapsed)
        readable = _gap_names(store, plans)
        for layer, plan in plans.items():
            step = pipeline.steps[layer]
            model = pipeline.llm_settings(step)["model"] or client.model
            calls = plan.est_calls
            tokens_in = sum(w.est_tokens_in for w in plan.stale if w.est_calls)
            tokens_out = calls * (avg_out_tokens(ctx, layer, default=DEFAULT_OUT_TOKENS) or 0)
            report.layers[layer] = LayerEstimate(
                layer, plan.kind, pipeline.level(layer), stale=len(plan.stale), cached=len(plan.cached),
                blocked=len(plan.blocked), retire=len(plan.retire), failed=failed[layer],
                partial=len(plan.partial), gaps={g: [readable(m) for m in missing]
                                                 for g, missing in list(plan.partial.items())[:20]},
                reasons=dict(Counter(w.reason for w in plan.stale)), llm_calls=calls,
                tokens_in=tokens_in, tokens_out=tokens_out, model=model if calls else "",
                cost_usd=estimate_cost(model, tokens_in, tokens_out, batch=batch,
                                       provider=client.provider) if calls else 0.0)
        for name, proj in pipeline.projections.items():
            # A projection changes if what it reads is about to change, or already differs.
            inputs = set(proj.from_) if isinstance(proj.from_, (list, tuple)) else {proj.from_}
            upstream = inputs | {u for l in pipeline.layer_order() if l in inputs
                                 for u in pipeline.upstream(l)}
            pending = any(plans[l].stale or plans[l].retire for l in upstream if l in plans)
            info = {"kind": proj.kind, "stale": pending or projection_stale(ctx, name)}
            if proj.kind == "context_doc":
                info["path"] = str(paths.output_file(pipeline, proj.path))
            report.projections[name] = info
        report.branch = paths.branch
        report.architecture = _architecture(store, plans, report.layers)
        if compare and paths.branch != "main":
            main = make_plan(paths.on_branch("main"), batch=batch, llm_config=llm_config,
                             compare=False)
            report.compared_to_main = _ratio(report.architecture, main.architecture)
        return report
    finally:
        store.close()
        client.close()
