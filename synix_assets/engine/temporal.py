"""Temporal facts (the Synapse design's semantic memory, 004 §2, the part Graphiti keeps): what
the turns of conversations state about entities — the user, people, projects, places, tools —
as statements, and the facts with validity intervals a sequence of statements adds up to.

Pure functions, so the same statements always give the same facts and a forgotten conversation's
statements simply are not replayed: its facts disappear and what they had invalidated is valid
again. A statement is a dict: turn_id, ts, session_id, subject, attribute, value, op, extractor;
`op` is "set" (the slot has one value: a new one invalidates the old), "add" (the slot holds
several: `uses`) or "end" (the value stops holding: "I no longer use X"). Without a model the
rules below extract statements (`RULES`); a model answers the same shape (engine/facts.py).

A fact: subject, attribute, value, valid_from, valid_until (None while it holds), the turns that
state it (`evidence`), the turn that invalidated it (`invalidated_by`), and for a fact implied
through a declared rule (`implies=["employer=Acme -> office=Lisbon"]`) the premise it follows
(`derived_from`): it holds exactly while its premise does, so it changes or disappears with it.
"""
from __future__ import annotations

import re

from synix_assets.pipeline.fact_rules import Rule, norm as _attr
from synix_resources.fingerprints import sha256_text

RULES = "rules (no model used)"  # change a rule → bump pipeline/fact_rules.RULES_VERSION
USER = "user"
MULTI = frozenset({"uses"})  # attributes whose slot holds several values at once

_NAME = r"([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)"          # a person or organisation, capitalised
_PLACE = r"([A-Z][\w'-]+(?:,? [A-Z][\w'-]+)*)"
_THING = r"([\w.+#/-]+(?: [\w.+#/-]+){0,3}?)"          # a tool or value: up to four words
_END = r"(?=\s*(?:[.,;!?]|$| (?:for|at|because|since|now|and|but|these days|anymore|any more|instead)\b))"
_ATTR = r"([a-z][a-z ]{1,30}?)"
# Words that start a sentence with a capital but name nobody.
_NOT_SUBJECTS = frozenset("""I We You He She They It The This That My Our Your Their Then So And But
Also Now Today Yesterday Lately Recently Well Yes No Okay Ok Hi Hello Thanks Sure""".split())

# (pattern, subject group or None for the user, attribute, value group, op). Order matters only
# for the statements a turn yields; each match is one statement.
_FIRST_PERSON = [
    (re.compile(r"\b(?i:my name is|call me)\s+" + _NAME), "name", 1, "set"),
    (re.compile(r"\b(?i:I (?:moved|relocated) to|I live in|I'm based in|I am based in|I now live in)\s+" + _PLACE),
     "location", 1, "set"),
    (re.compile(r"\b(?i:I (?:work|started working) (?:at|for)|I joined|I now work (?:at|for))\s+" + _NAME),
     "employer", 1, "set"),
    (re.compile(r"\bI (?:work as|started working as|am now|'m now) (?:an? )" + r"([a-z][\w -]{2,40}?)" + _END, re.I),
     "role", 1, "set"),
    (re.compile(r"\bmy ((?!name\b|project\b)[a-z][a-z ]{1,30}?) is (?:now )?(?:an? |the )?" + _THING + _END, re.I),
     None, 2, "set"),
]
_USES = re.compile(r"\bI (?:use|am using|'m using|started using|now use|switched to)\s+" + _THING + _END, re.I)
_STOPS = re.compile(r"\bI (?:no longer use|don't use|do not use|stopped using|gave up|quit using)\s+" + _THING + _END, re.I)
_SWITCH = re.compile(r"\bI (?:switched|moved|migrated) from\s+" + _THING + r" to\s+" + _THING + _END, re.I)
_PROJECT = r"(?:[Mm]y project|[Oo]ur project|[Tt]he project|[Pp]roject)\s+" + _NAME
_THIRD = [
    (re.compile(r"\b" + _NAME + r" (?:moved to|relocated to|lives in|is based in|now lives in)\s+" + _PLACE),
     "location", "set"),
    (re.compile(r"\b" + _NAME + r" (?:works at|works for|joined|now works at|now works for)\s+" + _NAME),
     "employer", "set"),
    (re.compile(r"\b" + _NAME + r"'s ([a-z][a-z ]{1,30}?) is (?:now )?(?:an? |the )?" + _THING + _END), None, "set"),
    (re.compile(r"\b[Tt]he ([a-z][a-z ]{1,30}?) of " + _NAME + r" is (?:now )?" + _THING + _END), "of", "set"),
]


def rule_statements(turn: dict) -> list[dict]:
    """What one user turn states, by the rules (empty for any other role)."""
    if turn.get("role", "user") != "user":
        return []
    text = " ".join(str(turn["content"]).split())
    out: list[tuple[str, str, str, str]] = []
    for sentence in re.split(r"(?<=[.!?;])\s+", text):
        out += _sentence(sentence)
    seen, stated = set(), []
    for subject, attribute, value, op in out:
        value = value.strip().rstrip(".,;:!?")  # the sentence's full stop, not the value's ("Node.js" keeps its own)
        key = (subject.lower(), attribute, value.lower(), op)
        if key in seen or not value.strip():
            continue
        seen.add(key)
        stated.append({"turn_id": turn["turn_id"], "ts": turn["ts"], "session_id": turn.get("session_id"),
                       "subject": subject, "attribute": attribute, "value": value, "op": op,
                       "extractor": RULES})
    return stated


def _sentence(s: str) -> list[tuple[str, str, str, str]]:
    out = []
    project = re.search(r"\b" + _PROJECT + r"\s+(?:now )?(?:uses|is built with|runs on)\s+" + _THING + _END, s)
    switch_p = re.search(r"\b" + _PROJECT + r"\s+(?:switched|moved|migrated) from\s+" + _THING + r" to\s+" + _THING + _END, s)
    stop_p = re.search(r"\b" + _PROJECT + r"\s+(?:no longer uses|stopped using|dropped)\s+" + _THING + _END, s)
    attr_p = re.search(r"\b" + _PROJECT + r"'s ([a-z][a-z ]{1,30}?) is (?:now )?(?:an? |the )?" + _THING + _END, s)
    if switch_p:
        out += [(switch_p.group(1), "uses", switch_p.group(2), "end"), (switch_p.group(1), "uses", switch_p.group(3), "add")]
    elif stop_p:
        out.append((stop_p.group(1), "uses", stop_p.group(2), "end"))
    elif project:
        out += [(project.group(1), "uses", v, "add") for v in _listed(s, project, 2)]
    if attr_p:
        out.append((attr_p.group(1), _attr(attr_p.group(2)), attr_p.group(3), "set"))
    if project or switch_p or stop_p or attr_p:
        return out
    for rule, attribute, group, op in _FIRST_PERSON:
        for m in rule.finditer(s):
            out.append((USER, attribute or _attr(m.group(1)), m.group(group), op))
    if (m := _SWITCH.search(s)) is not None:
        out += [(USER, "uses", m.group(1), "end"), (USER, "uses", m.group(2), "add")]
    elif (m := _STOPS.search(s)) is not None:
        out.append((USER, "uses", m.group(1), "end"))
    else:
        out += [(USER, "uses", v, "add") for m in _USES.finditer(s) for v in _listed(s, m)]
    for rule, attribute, op in _THIRD:
        for m in rule.finditer(s):
            if attribute == "of":
                subject, attr, value = m.group(2), _attr(m.group(1)), m.group(3)
            elif attribute is None:
                subject, attr, value = m.group(1), _attr(m.group(2)), m.group(3)
            else:
                subject, attr, value = m.group(1), attribute, m.group(2)
            if subject.split()[0] not in _NOT_SUBJECTS:
                out.append((subject, attr, value, op))
    for m in re.finditer(r"\b" + _NAME + r" (?:left|quit)\s+" + _NAME, s):
        if m.group(1).split()[0] not in _NOT_SUBJECTS:
            out.append((m.group(1), "employer", m.group(2), "end"))
    for m in re.finditer(r"\b" + _NAME + r" (?:uses|started using)\s+" + _THING + _END, s):
        if m.group(1).split()[0] not in _NOT_SUBJECTS:
            out.append((m.group(1), "uses", m.group(2), "add"))
    if (m := re.search(r"\bI (?:left|quit)\s+" + _NAME, s)) is not None:
        out.append((USER, "employer", m.group(1), "end"))
    return out


_PRONOUNS = frozenset("i we you he she they it my our his her their".split())


def _listed(s: str, m: re.Match, group: int = 1) -> list[str]:
    """The value a match found and the ones listed after it ("Vim, tmux and fzf")."""
    out = [m.group(group)]
    rest = s[m.end(group):]
    while (more := re.match(r"(?:,\s*(?:and\s+)?|\s+and\s+)" + _THING + _END, rest)) is not None:
        if more.group(1).split()[0].lower() in _PRONOUNS:  # "…, and I work at …": a new clause
            break
        out.append(more.group(1))
        rest = rest[more.end(1):]
    return out


def entity_key(subject: str) -> str:
    """Subjects compare without case or extra spaces ("the user" and "user" are one)."""
    key = " ".join(str(subject).lower().split())
    return USER if key in ("the user", "me", "i", "myself") else key


def fact_id(subject: str, attribute: str, value: str, since_turn: str) -> str:
    """A fact's identity: what it says and the turn it began with, so a later change of its end
    (an invalidation, or one forgotten) is a new version of the same fact."""
    return "fact-" + sha256_text("\n".join((entity_key(subject), attribute, value.lower(), since_turn)))[:16]


def replay(statements: list[dict], rules: list[Rule] = ()) -> list[dict]:
    """The facts a sequence of statements (in time order) adds up to, then the facts the rules
    imply from them; every fact ever valid is kept, with its interval."""
    facts: list[dict] = []
    open_by_slot: dict[tuple[str, str], list[dict]] = {}
    for st in statements:
        slot = (entity_key(st["subject"]), _attr(st["attribute"]))
        held = open_by_slot.setdefault(slot, [])
        same = next((f for f in held if f["value"].lower() == st["value"].lower()), None)
        if st["op"] == "end":
            if same is not None:
                _close(same, st)
                held.remove(same)
            continue
        if same is not None:  # restated: more evidence, same interval
            same["evidence"].append(st["turn_id"])
            same["sessions"] = list(dict.fromkeys(same["sessions"] + [st.get("session_id")]))
            same["last_seen"] = st["ts"]
            continue
        if st["op"] == "set" and slot[1] not in MULTI:
            for old in held:
                _close(old, st)
            held.clear()
        fact = {"fact_id": fact_id(st["subject"], slot[1], st["value"], st["turn_id"]),
                "subject": st["subject"] if slot[0] != USER else USER, "entity": slot[0],
                "attribute": slot[1], "value": st["value"], "valid_from": st["ts"], "valid_until": None,
                "last_seen": st["ts"], "evidence": [st["turn_id"]], "sessions": [st.get("session_id")],
                "invalidated_by": None,
                "extractor": st.get("extractor", RULES), "derived_from": None, "rule": None}
        held.append(fact)
        facts.append(fact)
    return facts + implied(facts, rules)


def _close(fact: dict, st: dict) -> None:
    fact["valid_until"] = st["ts"]
    fact["invalidated_by"] = {"turn_id": st["turn_id"], "value": st["value"], "op": st["op"]}


def implied(facts: list[dict], rules: list[Rule], depth: int = 4) -> list[dict]:
    """Facts the rules derive (chains up to `depth` rules long): each holds over its premise's
    interval and cites its premise's turns."""
    out: list[dict] = []
    frontier = facts
    for _ in range(depth):
        new = []
        for premise in frontier:
            for r in rules:
                if premise["attribute"] == r.attribute and premise["value"].lower() == r.value.lower():
                    new.append({**premise, "fact_id": "fact-" + sha256_text(premise["fact_id"] + "\n" + r.text)[:16],
                                "attribute": r.then_attribute, "value": r.then_value,
                                "evidence": list(premise["evidence"]), "derived_from": premise["fact_id"],
                                "rule": r.text})
        if not new:
            break
        out += new
        frontier = new
    return out


def valid_at(fact: dict, t: str | None) -> bool:
    """Whether `fact` held at instant `t` (ISO, UTC; None: now, i.e. not invalidated)."""
    if t is None:
        return fact["valid_until"] is None
    return fact["valid_from"] <= t and (fact["valid_until"] is None or fact["valid_until"] > t)


def fact_text(fact: dict) -> str:
    until = fact["valid_until"] or "now"
    how = f" (by rule {fact['rule']})" if fact.get("rule") else ""
    return f"{fact['subject']} · {fact['attribute']}: {fact['value']} [{fact['valid_from']} → {until}]{how}"
