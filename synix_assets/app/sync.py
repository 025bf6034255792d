"""`synix sync` / `pipeline.sync()` (the design's §4.4.1): the declared pipeline against the one
last synced or built, step by step, with what each change will reprocess — `terraform plan`
before `apply`.

A branch's definition (each step's type, inputs, prompt identity, model settings and config, and
each projection) is recorded in its store's meta when it is synced and when a whole build
completes; sync compares against that record and then records the new one.
"""
from __future__ import annotations

from typing import Any

from synix_assets.project import ProjectPaths

DEFINITION_KEY = "pipeline:definition"
WHY = {"type": "step type changed", "prompt": "prompt hash changed", "model": "model settings changed",
       "config": "config changed", "from": "inputs changed", "provider": "provider changed"}


def definition(pipeline, identity: str) -> dict[str, dict]:
    """step/projection → what its output depends on (JSON-ready)."""
    out: dict[str, dict] = {}
    for layer in pipeline.layer_order():
        step = pipeline.steps[layer]
        inputs = pipeline.version_inputs(layer, "" if step.kind == "merge" else identity)
        model = dict(inputs["model"])
        provider = model.pop("provider", "")
        config = dict(inputs["config"])
        out[layer] = {"kind": "step", "type": inputs["type"], "prompt": inputs["prompt"],
                      "model": model, "provider": provider, "from": config.pop("from"),
                      "config": config}
    for name, proj in pipeline.projections.items():
        out[name] = {"kind": "projection", "type": proj.kind,
                     "config": {k: (list(v) if isinstance(v, tuple) else str(v) if not isinstance(
                         v, (int, float, bool, str, type(None))) else v) for k, v in vars(proj).items()}}
    return out


def _why(old: dict, new: dict) -> list[str]:
    return [WHY.get(k, f"{k} changed") for k in ("type", "prompt", "model", "provider", "config", "from")
            if old.get(k) != new.get(k)]


def compare(old: dict[str, dict] | None, new: dict[str, dict], order: list[str]) -> list[dict]:
    """Changes in build order: added, removed, changed (own change, or an upstream one)."""
    if old is None:
        return [{"step": name, "change": "added", "why": "first sync"} for name in order]
    changed: set[str] = set()
    out: list[dict] = []
    for name in order:
        now, before = new[name], old.get(name)
        if before is None:
            out.append({"step": name, "change": "added", "why": "new step"})
            changed.add(name)
            continue
        reasons = _why(before, now)
        feeds = now.get("from") or now["config"].get("from_") or []
        feeds = [feeds] if isinstance(feeds, str) else feeds
        if not reasons and any(f in changed for f in feeds):
            reasons = ["upstream changed"]
        if reasons:
            out.append({"step": name, "change": "changed", "why": ", ".join(reasons)})
            changed.add(name)
    out += [{"step": name, "change": "removed", "why": "no longer declared"}
            for name in old if name not in new]
    return out


def sync(paths: ProjectPaths, *, llm_config: dict | None = None, record: bool = True) -> dict[str, Any]:
    """{"pipeline", "branch", "changes": [{"step", "change", "why", "records"}], "cost_usd"}."""
    from synix_assets.app.plan import make_plan
    from synix_assets.engine.llm_identity import llm_identity

    plan = make_plan(paths, llm_config=llm_config, compare=False)
    pipeline = paths.load_pipeline()
    current = definition(pipeline, llm_identity(**(llm_config or {})))
    store = paths.open_store()
    try:
        changes = compare(store.get_meta(DEFINITION_KEY), current,
                          [*pipeline.layer_order(), *pipeline.projections])
        if record:
            store.set_meta(DEFINITION_KEY, current)
    finally:
        store.close()
    for change in changes:
        est = plan.layers.get(change["step"])
        change["records"] = est.stale if est is not None else 0
    return {"pipeline": pipeline.name, "branch": paths.branch, "changes": changes,
            "cost_usd": round(plan.total("cost_usd"), 6), "llm_calls": int(plan.total("llm_calls"))}


def record_definition(ctx) -> None:
    """After a whole build: the definition it built is the one the next sync compares with."""
    ctx.store.set_meta(DEFINITION_KEY, definition(ctx.pipeline, ctx.llm_identity))
