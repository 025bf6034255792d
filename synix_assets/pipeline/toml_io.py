"""Export a pipeline to TOML for sharing, and import it back.

Prompts are written as `module:qualname` (plus their identity hash, so a reader can tell whether
the imported function is the same version) or `template:PATH`; a projection's `on_update` as
its URL, or a function as `module:qualname`. On import a prompt or hook function is looked up
in `namespace` first, then imported.
"""
from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import tomli_w

from synix_assets.pipeline.prompts import TemplateFile, prompt_identity
from synix_assets.pipeline.steps import SearchIndexProjection
from synix_resources.errors import PipelineDefinitionError

if TYPE_CHECKING:
    from synix_assets.pipeline.spec import PipelineSpec

P = TypeVar("P", bound="PipelineSpec")


def _prompt_ref(fn: Any, base_dir: Path | None = None) -> str | None:
    if fn is None:
        return None
    if isinstance(fn, TemplateFile):
        # Relative to the pipeline's folder when inside it, so the shared file works elsewhere.
        path = fn.path
        if base_dir is not None and path.is_absolute() and path.is_relative_to(base_dir):
            path = path.relative_to(base_dir)
        return f"template:{path}"
    return f"{fn.__module__}:{fn.__qualname__}"


def pipeline_to_toml(p: PipelineSpec) -> str:
    doc: dict[str, Any] = {"pipeline": {"name": p.name, "agent": p.agent,
                                        "description": p.description,
                                        "temperature": p.temperature, "max_tokens": p.max_tokens}}
    if p.model:
        doc["pipeline"]["model"] = p.model
    if p.created_at:
        doc["pipeline"]["created_at"] = p.created_at
    doc["sources"] = [{"name": s.name, "path": str(s.path), "format": s.format,
                       **({"kind": s.kind} if s.kind != "exports" else {}),
                       **({"window": s.window} if s.window else {}),
                       **({"url": s.url, "every": s.every} if s.kind == "api" else {})}
                      for s in p.sources.values()]
    steps = []
    implicit = getattr(p, "implicit", {})
    for s in p.steps.values():
        if s.name in implicit:  # declared again by the step that reads its source
            continue
        item: dict[str, Any] = {"name": s.name, "kind": s.kind,
                                "from": [implicit.get(u, u) for u in s.from_]}
        if s.prompt is not None:
            item["prompt"] = _prompt_ref(s.prompt, p.base_dir)
            item["prompt_identity"] = prompt_identity(s.prompt)
        if s.validate is not None:
            item["validate"] = _prompt_ref(s.validate)
        for key in ("model", "temperature", "max_tokens", "system"):
            value = getattr(s, key)
            if value is not None:
                item[key] = value
        if s.description:
            item["description"] = s.description
        item["config"] = {k: v for k, v in s.config.items() if v is not None}
        steps.append(item)
    doc["steps"] = steps
    projs = []
    hooks = getattr(p, "on_update", {})
    for pr in p.projections.values():
        if isinstance(pr, SearchIndexProjection):
            item = {"name": pr.name, "kind": pr.kind, "from": list(pr.from_), "embeddings": pr.embeddings}
        else:
            item = {"name": pr.name, "kind": pr.kind, "from": pr.from_, "path": str(pr.path),
                    "budget_tokens": pr.budget_tokens}
        hook = hooks.get(pr.name)
        if hook is not None:  # a URL as it is; a function by reference, like a prompt
            item["on_update"] = hook if isinstance(hook, str) else _prompt_ref(hook)
        projs.append(item)
    doc["projections"] = projs
    return tomli_w.dumps(doc)


def _resolve_prompt(ref: str, namespace: dict[str, Any], base_dir: Path | None) -> Callable[..., Any] | TemplateFile:
    if ref.startswith("template:"):
        path = Path(ref.removeprefix("template:"))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return TemplateFile(path)
    module, _, qualname = ref.partition(":")
    if qualname in namespace:
        return namespace[qualname]
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise PipelineDefinitionError(
            f"prompt {ref} cannot be found",
            hint="pass namespace={'name': function} to from_toml for prompts defined in pipeline.py") from None
    return obj


def _step_prompt(step: dict[str, Any], namespace: dict[str, Any],
                 base_dir: Path | None) -> Callable[..., Any] | TemplateFile:
    if "prompt" not in step:
        raise PipelineDefinitionError(f"step '{step['name']}' ({step['kind']}): no prompt in the TOML",
                                      hint='add prompt = "module:function" or "template:path" to the step')
    return _resolve_prompt(step["prompt"], namespace, base_dir)


def pipeline_from_toml(text: str, *, cls: type[P], base_dir: str | Path | None = None,
                       namespace: dict[str, Any] | None = None) -> P:
    """A validated pipeline of class `cls` (the caller's: PipelineSpec, or the Pipeline that can
    branch), so this module needs neither."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PipelineDefinitionError(f"pipeline TOML is invalid: {exc}") from None
    namespace = namespace or {}
    head = doc.get("pipeline", {})
    p = cls(head.get("name", "pipeline"), agent=head.get("agent", ""),
            description=head.get("description", ""), model=head.get("model"),
            temperature=head.get("temperature", 0.3), max_tokens=head.get("max_tokens", 1024),
            base_dir=base_dir, created_at=head.get("created_at"))
    for s in doc.get("sources", []):
        if s.get("kind", "exports") == "live":
            p.source(s["name"], path=s["path"], kind="live", window=s.get("window", 0))
        elif s.get("kind") == "api":
            p.source(s["name"], path=s["path"], kind="api", format=s.get("format", "openwebui"),
                     url=s.get("url"), every=s.get("every", 900))
        else:
            p.source(s["name"], path=s["path"], format=s.get("format", "auto"))
    bd = Path(base_dir) if base_dir else None
    for s in doc.get("steps", []):
        cfg = dict(s.get("config", {}))
        common = {k: s[k] for k in ("model", "temperature", "max_tokens", "system") if k in s}
        kind, name, from_ = s["kind"], s["name"], s["from"]
        desc = s.get("description", "")
        if kind == "merge":
            p.merge(name, from_=from_, dedupe=cfg.get("dedupe", "metadata_match"),
                    fields=cfg.get("fields", ["conversation_id"]),
                    conflict=cfg.get("conflict", "prefer_latest"), pii=cfg.get("pii"), description=desc,
                    threshold=cfg.get("threshold"))
        elif kind == "transform":
            p.transform(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd), pii=cfg.get("pii"),
                        description=desc, validate=_resolve_prompt(s["validate"], namespace, bd)
                        if "validate" in s else None, **common)
        elif kind == "aggregate":
            p.aggregate(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd),
                        period=cfg.get("period"),
                        topics=cfg.get("topics"), topic_limit=cfg.get("topic_limit", 12),
                        pii=cfg.get("pii"), description=desc, **common)
        elif kind == "fold":
            p.fold(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd),
                   order_key=cfg.get("order_key", "group_key"),
                   checkpoint_every=cfg.get("checkpoint_every", 6),
                   max_state_tokens=cfg.get("max_state_tokens", 8000), pii=cfg.get("pii"),
                   description=desc, **common)
        elif kind == "agent":
            p.agent_step(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd),
                    tools=cfg.get("tools", "syke"), max_turns=cfg.get("max_turns", 10),
                    budget_tokens=cfg.get("budget_tokens", 60_000),
                    batch_size=cfg.get("batch_size", 10), description=desc, **common)
        elif kind == "window_fold":
            p.window_fold(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd),
                          window=cfg.get("window", 12), description=desc, model=common.get("model"),
                          max_tokens=common.get("max_tokens"))
        elif kind == "loops":
            p.open_loops(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd), description=desc,
                         model=common.get("model"), max_tokens=common.get("max_tokens"))
        elif kind == "facts":
            p.facts(name, from_=from_[0], prompt=_step_prompt(s, namespace, bd), implies=cfg.get("implies"),
                    description=desc, model=common.get("model"), max_tokens=common.get("max_tokens"))
        elif kind == "identity":
            p.identity_facts(name, from_=from_[0], description=desc)
        else:
            raise PipelineDefinitionError(f"step '{name}': unknown kind {kind!r} in TOML")
    for pr in doc.get("projections", []):
        hook = pr.get("on_update")
        if isinstance(hook, str) and "://" not in hook:
            hook = _resolve_prompt(hook, namespace, bd)
        if pr["kind"] == "search_index":
            p.search_index(pr["name"], from_=pr["from"], embeddings=pr.get("embeddings", False),
                           on_update=hook)
        else:
            p.context_doc(pr["name"], from_=pr["from"], path=pr.get("path", "context.md"),
                          budget_tokens=pr.get("budget_tokens", 4000), on_update=hook)
    return p.validate()
