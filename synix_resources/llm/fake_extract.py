"""What the `fake` provider answers a JSON extraction request (`request.shape == "json"`, the
open-loops layer): for each `[turn id] user: …` line of the prompt, what the live inbox's rules
find in it (synix_resources/live/procedural.py), as the JSON object the prompt asks for. So
tests drive the model path (a JSON answer parsed into loops and facts) with no model."""
from __future__ import annotations

import json
import re

from synix_resources.live.procedural import rule_event

from .types import LLMRequest

_LINE = re.compile(r"^\[([^\]]+)\] user: (.*)$", re.M)


def extract_answer(request: LLMRequest) -> str:
    turns = []
    for turn_id, content in _LINE.findall(request.prompt):
        e = rule_event({"turn_id": turn_id, "ts": "", "content": content})
        if e["completes"] or e["mentions"] or e["facts"]:
            turns.append({"turn_id": turn_id, "completes": e["completes"],
                          "mentions": [{"kind": k, "text": t} for k, t in e["mentions"]],
                          "facts": [{"key": k, "value": v} for k, v in e["facts"]]})
    return json.dumps({"turns": turns})
