"""A generated benchmark of memory that changes, measured per MEME task type (arXiv 2605.12477):
Exact recall, Tracking (the value at a time, the latest after changes), Deletion (after
`forget`, the fact is gone), Cascade (a fact implied through a declared rule changes or
disappears with its premise) and Absence (never stated → "not known").

The generator is ours, seeded and deterministic: fictitious people, projects and the user, whose
facts (location, employer, role, a project's language and database, the user's editor) are
stated in dated conversations, change later, are stated once in a conversation that is then
forgotten, or imply others through declared rules ("employer=Bluefin -> office=Porto",
"language=Rust -> build tool=cargo"). The expected answers come from the generator's own
timeline, never from the memory under test.

Two systems answer the same probes: the memory (a scratch project whose pipeline is
transcripts → `facts(implies=the rules)` → a search index, built by the normal build and
forgotten with `forget`), read through the brief (Tier 2, with `as_of` for a time); and raw RAG,
the turns searched as they are (retrieval.RawRag, full text) and read by the same rule reader
with the same rules — best-ranked statement wins, no notion of time. After the forget, raw RAG's
index no longer holds the forgotten conversations either.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from synix_assets.eval.data import Case, Session, Turn
from synix_assets.eval.source import conversation_id

TASKS = ("exact", "tracking", "deletion", "cascade", "absence")
NOT_KNOWN = "not known"
FIRST = ["Mira", "Tomas", "Ines", "Kofi", "Lena", "Ravi", "Yuki", "Oskar", "Amara", "Felix", "Noor", "Elio"]
LAST = ["Okafor", "Lindqvist", "Sarrazin", "Mensah", "Varga", "Iyer", "Tanabe", "Brandt", "Quispe", "Halloran"]
CITIES = ["Porto", "Lisbon", "Oslo", "Tallinn", "Ghent", "Valencia", "Krakow", "Bergen", "Turin", "Utrecht"]
COMPANIES = {"Bluefin Labs": "Porto", "Northwind Works": "Lisbon", "Quarry Systems": "Oslo",
             "Tidewell": "Ghent", "Copperleaf": "Turin"}
LANGUAGES = {"Rust": "cargo", "Python": "uv", "TypeScript": "pnpm", "Elixir": "mix", "Kotlin": "Gradle"}
DATABASES = ["Postgres", "SQLite", "DuckDB", "Redis", "ClickHouse"]
PROJECTS = ["Atlas", "Heron", "Quill", "Juniper", "Ember", "Saffron"]
ROLES = ["designer", "data engineer", "product manager", "researcher", "site reliability engineer"]
EDITORS = ["Helix", "Neovim", "Emacs", "Zed", "Kakoune"]
FILLER = ["Can you suggest a good name for a reading group?", "What is a quick dinner with lentils?",
          "I had a long walk by the river today.", "Any tips for sleeping better on trains?",
          "Remind me what a Gantt chart is good for.", "The weather was grey all morning."]
MENTION = ["I had lunch with {p} today.", "{p} sent me a funny video.", "I met {p} at the station."]
# How each kind of change is said (several phrasings per kind, picked by the seed).
SAY = {
    ("person", "location"): ["{s} moved to {v}.", "Quick update: {s} now lives in {v}.", "{s} relocated to {v} last week."],
    ("person", "employer"): ["{s} works at {v}.", "{s} joined {v} this month.", "Big news, {s} now works for {v}."],
    ("person", "role"): ["{s}'s role is {v}.", "{s}'s role is now {v}."],
    ("user", "location"): ["I moved to {v}.", "I live in {v} now.", "I'm based in {v} these days."],
    ("user", "editor"): ["My editor is {v}.", "My editor is now {v}."],
    ("user", "employer"): ["I work at {v}.", "I joined {v}."],
    ("project", "language"): ["{s}'s language is {v}.", "{s}'s language is now {v}."],
    ("project", "database"): ["{s}'s database is {v}.", "{s}'s database is now {v}."],
}
# Phrasings the offline rules (engine/temporal.py) were not written for: with `unseen` > 0 that
# share of statements is said this way, measuring what the rules miss (a model reads them through
# the prompt; offline nothing does).
UNSEEN = {
    ("person", "location"): ["{s} has been living in {v} since the spring."],
    ("person", "employer"): ["{s} took a job with {v}."],
    ("person", "role"): ["{s} is working as a {v} now."],
    ("user", "location"): ["Home is {v} now."],
    ("user", "editor"): ["These days I write everything in {v}."],
    ("user", "employer"): ["I took a job with {v}."],
    ("project", "language"): ["{s} is written in {v} now."],
    ("project", "database"): ["{s} keeps its data in {v}."],
}


@dataclass
class Fact:
    subject: str
    kind: str          # person | user | project
    attribute: str
    value: str
    session: str
    day: str           # ISO date-time the turn is dated


@dataclass
class World:
    seed: int
    rules: list[str]
    sessions: list[Session] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)   # every statement, in time order
    forget: list[str] = field(default_factory=list)   # session ids forgotten before phase 2
    probes: list[dict] = field(default_factory=list)
    case_id: str = "meme"

    def case(self, without: tuple[str, ...] = ()) -> Case:
        return Case(self.case_id, [s for s in self.sessions if s.session_id not in without], [])

    def conversations_forgotten(self) -> list[str]:
        return [conversation_id(self.case_id, s) for s in self.forget]


def _rules() -> list[str]:
    return ([f"employer={c} -> office={city}" for c, city in COMPANIES.items()]
            + [f"language={lang} -> build tool={tool}" for lang, tool in LANGUAGES.items()])


def generate(seed: int = 7, people: int = 6, projects: int = 3, sessions: int = 30,
             unseen: float = 0.0) -> World:
    """The seeded world: dated sessions stating (and changing) facts, the sessions to forget and
    the probes with their expected answers; `unseen`: the share of statements said in phrasings
    the offline rules do not know (0: none)."""
    rng = random.Random(seed)
    world = World(seed, _rules())
    names = rng.sample([f"{f} {l}" for f in FIRST for l in LAST], people)
    projs = rng.sample(PROJECTS, projects)
    start = date(2025, 1, 6)
    days = sorted(rng.sample(range(0, 170), sessions))
    plan: list[list[tuple[str, str, str, str]]] = [[] for _ in range(sessions)]  # (kind, subject, attr, value)
    slots = ([("person", n, "location", CITIES) for n in names] + [("person", n, "employer", list(COMPANIES)) for n in names]
             + [("person", n, "role", ROLES) for n in names[: people // 2]]
             + [("project", p, "language", list(LANGUAGES)) for p in projs]
             + [("project", p, "database", DATABASES) for p in projs]
             + [("user", "user", "location", CITIES), ("user", "user", "editor", EDITORS),
                ("user", "user", "employer", list(COMPANIES))])
    for kind, subject, attr, pool in slots:
        changes = rng.choice([0, 1, 1, 2])  # how many times the value changes after it is first said
        when = sorted(rng.sample(range(sessions - 4), changes + 1))  # the last 4 sessions: deletions
        values = rng.sample(pool, changes + 1)
        for i, v in zip(when, values):
            plan[i].append((kind, subject, attr, v))
    # Deletion: a change said only in one late session that is then forgotten (a person's move,
    # a job change whose office follows by rule, a project's database), or a fact said only there.
    late = list(range(sessions - 4, sessions))
    plan[late[0]].append(("person", names[0], "location", _other(rng, CITIES, plan, names[0], "location")))
    plan[late[1]].append(("person", names[1], "employer", _other(rng, list(COMPANIES), plan, names[1], "employer")))
    plan[late[2]].append(("project", projs[0], "language", _other(rng, list(LANGUAGES), plan, projs[0], "language")))
    plan[late[3]].append(("person", names[-1], "role", rng.choice(ROLES)))  # never said before
    world.forget = [f"s{late[1]:02d}", f"s{late[2]:02d}", f"s{late[3]:02d}", f"s{late[0]:02d}"]
    for i in range(sessions):
        sid = f"s{i:02d}"
        when = start + timedelta(days=days[i])
        turns, n = [], 0
        lines = [_say(rng, k, s, a, v, unseen) for k, s, a, v in plan[i]]
        lines += [rng.choice(MENTION).format(p=rng.choice(names)), rng.choice(FILLER)]
        rng.shuffle(lines)
        for text in lines:
            n += 1
            turns.append(Turn(f"{sid}-{n}", "user", "user", text))
            n += 1
            turns.append(Turn(f"{sid}-{n}", "assistant", "assistant", rng.choice(["Noted.", "Got it.", "Thanks for telling me."])))
        world.sessions.append(Session(sid, when.isoformat() + "T09:00:00Z", tuple(turns)))
        for k, s, a, v in plan[i]:
            world.facts.append(Fact(s, k, a, v, sid, when.isoformat() + "T09:00:00Z"))
    world.probes = _probes(rng, world, names, projs)
    return world


def _other(rng, pool, plan, subject, attr) -> str:
    said = {v for session in plan for k, s, a, v in session if s == subject and a == attr}
    return rng.choice([v for v in pool if v not in said])


def _say(rng, kind, subject, attr, value, unseen: float = 0.0) -> str:
    said = rng.choice(SAY[(kind, attr)])
    if unseen and rng.random() < unseen:  # drawn only then: unseen=0 keeps every seed's world as it was
        said = rng.choice(UNSEEN[(kind, attr)])
    return said.format(s=subject, v=value)


def truth(world: World, subject: str, attribute: str, at: str | None, without: tuple[str, ...] = ()) -> str:
    """The generator's own answer: the value last said by `at` (a declared rule's conclusion
    from its premise's value), or NOT_KNOWN."""
    rules = {}
    for r in world.rules:
        premise, then = (x.strip() for x in r.split("->"))
        pa, pv = premise.split("=")
        ta, tv = then.split("=")
        rules.setdefault(ta, []).append((pa, pv, tv))
    if attribute in rules:
        for pa, pv, tv in rules[attribute]:
            if truth(world, subject, pa, at, without) == pv:
                return tv
        return NOT_KNOWN
    said = [f for f in world.facts if f.subject == subject and f.attribute == attribute
            and f.session not in without and (at is None or f.day <= at)]
    return said[-1].value if said else NOT_KNOWN


def _probes(rng, world: World, names, projs) -> list[dict]:
    out: list[dict] = []
    gone = tuple(world.forget)
    slots = {(f.subject, f.attribute) for f in world.facts}

    def add(task, subject, attribute, at=None, phase="before"):
        without = gone if phase == "after" else ()
        out.append({"id": f"{task}-{len(out) + 1}", "task": task, "subject": subject, "attribute": attribute,
                    "as_of": at, "phase": phase, "expected": truth(world, subject, attribute, at, without)})

    for subject, attribute in sorted(slots):
        said = [f for f in world.facts if (f.subject, f.attribute) == (subject, attribute)]
        kept = [f for f in said if f.session not in gone]
        if len(kept) == 1:
            add("exact", subject, attribute)
        elif len(kept) > 1:
            add("tracking", subject, attribute)                          # latest after changes
            mid = kept[rng.randrange(len(kept) - 1)]
            add("tracking", subject, attribute, at=_between(mid.day, kept[kept.index(mid) + 1].day))
    for f in world.facts:
        if f.session in gone:
            add("deletion", f.subject, f.attribute, phase="after")
    for f in world.facts:  # premises of a declared rule: the implied fact now, at an earlier time, after forget
        if f.attribute in ("employer", "language"):
            then = "office" if f.attribute == "employer" else "build tool"
            add("cascade", f.subject, then, at=_day_end(f.day) if f.session not in gone else None,
                phase="after" if f.session in gone else "before")
    subjects = {f.subject: f.kind for f in world.facts}
    for subject, kind in sorted(subjects.items()):  # attributes said of others, never of this one
        for attribute in ("role", "database", "hobby") if kind != "user" else ("role", "hobby"):
            if (subject, attribute) not in slots:
                add("absence", subject, attribute)
    for person in ("Zora Pike", "Anselm Grau"):  # never mentioned at all
        add("absence", person, "location")
    out[:] = list({(p["task"], p["subject"], p["attribute"], p["as_of"], p["phase"]): p for p in out}.values())
    for i, p in enumerate(out):
        p["id"] = f"{p['task']}-{i + 1}"
    return out


def _day_end(day: str) -> str:
    """The end of a session's day: every turn of it said by then (turns are a second apart)."""
    return day[:10] + "T23:00:00Z"


def _between(a: str, b: str) -> str:
    """An instant after `a` and before `b` (both ISO, at least a day apart by construction)."""
    da, db = date.fromisoformat(a[:10]), date.fromisoformat(b[:10])
    mid = da + (db - da) // 2
    return (mid if mid > da else da).isoformat() + "T12:00:00Z"


def question(probe: dict) -> str:
    who = "the user" if probe["subject"] == "user" else probe["subject"]
    return f"What is {who}'s {probe['attribute']}?" + (f" (as of {probe['as_of'][:10]})" if probe["as_of"] else "")


def pipeline_source(rules: list[str]) -> str:
    """The scratch project's pipeline: transcripts → facts (with the declared rules) → search."""
    return f'''"""Generated by `synix eval meme`: transcripts, the temporal fact layer with the benchmark's
declared rules, and a search index over the transcripts."""
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("meme", agent="meme")
pipeline.source("exports", path="exports", format="auto")
pipeline.merge("transcripts", from_=["exports"])
pipeline.facts("facts", from_="transcripts", prompt=prompts.temporal_facts, implies={rules!r})
pipeline.search_index("memory-index", from_=["transcripts"])
'''


def score(answers: dict[str, str], probes: list[dict]) -> dict[str, dict]:
    """Per task type: probes, correct, accuracy."""
    out = {t: {"probes": 0, "correct": 0} for t in TASKS}
    for p in probes:
        row = out[p["task"]]
        row["probes"] += 1
        row["correct"] += int(answers[p["id"]].casefold() == p["expected"].casefold())
    for row in out.values():
        row["accuracy"] = round(row["correct"] / row["probes"], 3) if row["probes"] else None
    return out


def probe_path(root: Path) -> Path:
    return root / "probes.json"
