"""The brief's Tier 2 (Synapse design 004 §2, §5): the temporal facts a `pipeline.facts` layer
built, as they held at an instant — now, or `as_of` ("what did the user's setup look like in
March?"). A fact invalidated later still holds at an earlier `as_of`; each comes with its valid
interval, the turns and conversations that state it and its record (lineage reaches the
transcripts). Facts the query's words name come first; the rest follow, so a broad question
("setup") still sees the whole state."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from synix_assets.engine.temporal import USER, entity_key, valid_at
from synix_assets.engine.turns import DERIVED
from synix_resources.llm.mapreduce import estimate_tokens

if TYPE_CHECKING:
    from synix_assets.app.memory.service import MemoryService

FIELDS = ("subject", "attribute", "value", "valid_from", "valid_until", "invalidated_by", "evidence",
          "sessions", "extractor", "derived_from", "rule")


def facts_layer(pipeline) -> str | None:
    """The first `facts` layer the pipeline declares, or None."""
    return next((name for name, step in pipeline.steps.items() if step.kind == "facts"), None)


def all_facts(store, layer: str) -> list[dict]:
    """Every fact record of `layer` (valid now or invalidated), as dicts with its record id."""
    out = []
    for a in store.list_layer(layer):
        if a.group_key.startswith(DERIVED + "fact-"):
            f = {k: a.metadata.get(f"meta.custom.{k}") for k in FIELDS}
            out.append(dict(f, record_id=a.artifact_id))
    return out


def _words(text: str) -> set[str]:
    return {w.removesuffix("'s") for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 1}


def facts_at(facts: list[dict], as_of: str | None, query: str | None = None) -> list[dict]:
    """The facts valid at `as_of` (None: now), those the query names first (its words in the
    subject, attribute or value; "I"/"my"/"me" name the user), then by subject and attribute."""
    words = _words(query or "")
    if words & {"i", "my", "me", "user"}:
        words.add(USER)

    def score(f: dict) -> int:
        return len(words & (_words(f["subject"]) | _words(f["attribute"]) | _words(f["value"])))

    held = [f for f in facts if valid_at(f, as_of)]
    return sorted(held, key=lambda f: (-score(f), entity_key(f["subject"]) != USER, entity_key(f["subject"]),
                                       f["attribute"], f["valid_from"]))


def line(f: dict) -> str:
    how = f" (by rule {f['rule']})" if f.get("rule") else ""
    return (f"- {f['subject']} · {f['attribute']}: {f['value']} — valid {f['valid_from']} → "
            f"{f['valid_until'] or 'now'}{how} [{f['record_id']}; turns {', '.join(f['evidence'][:3])}]")


def tier2(svc: MemoryService, branch: str, query: str | None, as_of: str | None, budget_tokens: int) -> dict | None:
    """Tier 2 for the brief, within `budget_tokens` (whole facts only), or None when the pipeline
    declares no facts layer."""
    layer = facts_layer(svc.pipeline)
    if layer is None:
        return None
    with svc.reader(branch) as r:
        known = all_facts(r.store, layer)
    held = facts_at(known, as_of, query)
    title = f"## Facts (valid {'at ' + as_of if as_of else 'now'})"
    kept, used = [], estimate_tokens(title)
    for f in held:
        cost = estimate_tokens(line(f)) + 1
        if used + cost > budget_tokens:
            break
        kept.append(f)
        used += cost
    text = "\n".join([title, *map(line, kept)]) if kept else ""
    return {"layer": layer, "facts": kept, "valid": len(held), "known": len(known),
            "truncated": len(kept) < len(held), "text": text, "tokens": estimate_tokens(text) if text else 0,
            **({"as_of": as_of} if as_of else {})}
