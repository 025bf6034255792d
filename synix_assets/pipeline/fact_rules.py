"""The declared rules of a facts layer (`pipeline.facts(..., implies=[...])`): "attr=value ->
attr=value", checked where the pipeline is declared and applied by the engine's replay
(engine/temporal.py)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from synix_resources.errors import PipelineDefinitionError


# The version of the offline extraction rules (engine/temporal.py), part of a facts step's
# config and so of its version: bump it when the rules change, and every conversation is read
# again by the new rules (a prompt's change does the same for the model path).
RULES_VERSION = 2


def norm(text: str) -> str:
    """An attribute's spelling: lower case, single spaces."""
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Rule:
    """A declared implication: while `attribute`=`value` holds for a subject, so does
    `then_attribute`=`then_value` (values compare without case)."""

    attribute: str
    value: str
    then_attribute: str
    then_value: str
    text: str


def parse_rules(name: str, implies: Iterable[str] | str | None) -> list[Rule]:
    """`implies=["employer=Acme -> office=Lisbon", …]` (each "attr=value -> attr=value")."""
    if implies is None:
        return []
    if isinstance(implies, str) or not all(isinstance(r, str) for r in implies):
        raise PipelineDefinitionError(f"step '{name}' (facts): implies must be a list of rules",
                                      hint='e.g. implies=["employer=Acme -> office=Lisbon"]')
    out = []
    for text in implies:
        m = re.fullmatch(r"\s*([^=>]+?)\s*=\s*([^=>]+?)\s*->\s*([^=>]+?)\s*=\s*([^=>]+?)\s*", text)
        if m is None:
            raise PipelineDefinitionError(f"step '{name}' (facts): rule {text!r} is not \"attr=value -> attr=value\"",
                                          hint='e.g. "employer=Acme -> office=Lisbon"')
        out.append(Rule(norm(m.group(1)), m.group(2), norm(m.group(3)), m.group(4), " ".join(text.split())))
    return out
