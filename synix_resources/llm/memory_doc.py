"""The offline memory document a fold builds without a model: sections an agent can use.

Every bullet is a sentence copied from an input (never a sentence of its own) followed by the
date or period it comes from; a recurring topic's line also lists the periods it recurs in. The
document is its own state: the next fold step reads its bullets back (with their dates) beside
the new input and lays the whole out again within the word budget, so older facts compete with
new ones, as they would in a model's rewrite.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from synix_resources.keyphrases import phrases

from .sentences import Sentence, select, sentences_of
from .types import LLMRequest

NOTE = ("Extractive memory (offline, no LLM): every line is a sentence selected from the inputs, "
        "followed by the period it comes from.")
WHO, TOPICS, RECENT, OPEN = "Who the user is", "Recurring topics", "Recent focus", "Open threads"
SHARES = {WHO: 0.2, TOPICS: 0.35, RECENT: 0.25, OPEN: 0.2}  # of the word budget
MOST_TOPICS = 6
_FIRST_PERSON = re.compile(
    r"\b(?:i am|i'm|i work|i live|i've been|i moved|i'm moving|my (?:wife|husband|partner|job|"
    r"team|company|boss|manager|family|son|daughter|sister|brother|friend|name|role|home|dog|cat)|"
    r"i (?:run|train|bake|write|build|study|teach|manage|lead|joined|started|accepted|signed))\b",
    re.I)
_OPEN = re.compile(
    r"\?$|\b(?:next|i'll|i will|plan to|planning|going to|want to|need to|should i|todo|to do|"
    r"follow up|not yet|still|waiting|deadline|decide|deciding|before)\b", re.I)
_TOPIC_LINE = re.compile(r"^- (?P<name>[^():]+) \((?P<dates>[^()]*)\): (?P<text>.+) \((?P<date>[^()]*)\)$")
_HEADLINE = re.compile(r"^# Topics: (.+)$", re.M)
_LINE = re.compile(r"^- (?P<text>.+) \((?P<date>[^()]*)\)$")


@dataclass(frozen=True)
class _Item:
    text: str
    date: str
    order: int  # position in the inputs: the state's lines first, then the new input's


def memory_document(request: LLMRequest, budget: int) -> tuple[str, tuple[str, ...]]:
    """The document and the ids of the sources its lines come from; ("", ()) when the inputs
    are too thin to lay one out."""
    items, topic_dates, origin = _read(request)
    if not items:
        return "", ()
    latest = max((i.date for i in items), default="")
    used: set[str] = set()
    # who the user is, what is open and what is recent come first; topics take what is left
    who = _pick([i for i in items if _FIRST_PERSON.search(i.text)], budget * SHARES[WHO], used, latest_first=False)
    still_open = _pick([i for i in items if _OPEN.search(i.text)], budget * SHARES[OPEN], used, latest_first=True)
    recent = _pick([i for i in items if i.date == latest], budget * SHARES[RECENT], used, latest_first=False)
    topic_lines = _topics(items, topic_dates, int(budget * SHARES[TOPICS]), used)
    sections = [(WHO, [_line(i) for i in who]), (TOPICS, topic_lines),
                (RECENT + (f" ({latest})" if latest else ""), [_line(i) for i in recent]),
                (OPEN, [_line(i) for i in still_open])]
    if not any(lines for _, lines in sections):  # no sentence fits a section's share: the
        return "", ()  # caller selects (and cuts) sentences instead of returning a bare note
    body = [NOTE]
    for title, lines in sections:
        if lines:
            body += ["", f"## {title}", *lines]
    sources = tuple(dict.fromkeys(origin[t] for t in used if t in origin))
    return "\n".join(body), sources


def _read(request: LLMRequest):
    """Items (sentence, date) of every source; a source that is an earlier document of this
    kind gives its bullets back with their dates, and its topics' periods."""
    items: list[_Item] = []
    topic_dates: dict[str, set[str]] = {}
    origin: dict[str, str] = {}
    seen: set[str] = set()

    def add(text: str, date: str, source_id: str) -> None:
        if text not in seen:
            seen.add(text)
            items.append(_Item(text, date, len(items)))
            origin[text] = source_id

    plain: list[tuple[str, str]] = []
    for source_id, text in request.sources:
        bullets = [line for line in text.splitlines() if line.startswith("- ")]
        if bullets and all(_LINE.match(b) for b in bullets):  # a document this module wrote
            for bullet in bullets:
                if topic := _TOPIC_LINE.match(bullet):
                    topic_dates.setdefault(topic["name"], set()).update(
                        d.strip() for d in topic["dates"].split(",") if d.strip())
                    add(topic["text"], topic["date"], source_id)
                else:
                    line = _LINE.match(bullet)
                    add(line["text"], line["date"], source_id)
        else:
            plain.append((source_id, text))
            for headline in _HEADLINE.findall(text):  # a rollup's `# Topics:` line
                for name in headline.split(","):
                    topic_dates.setdefault(name.strip(), set()).add(request.source_dates.get(source_id, ""))
    for sentence in sentences_of(plain) if plain else []:
        add(sentence.text, request.source_dates.get(sentence.source_id, ""), sentence.source_id)
    return items, topic_dates, origin


def _pick(candidates: list[_Item], budget: float, used: set[str], latest_first: bool) -> list[_Item]:
    """The most informative candidates not yet used that fit `budget` words, oldest first;
    `latest_first`: only from the three latest periods (a thread of last month matters more
    than one of a year ago)."""
    fresh = [i for i in candidates if i.text not in used]
    if latest_first:
        recent = sorted({i.date for i in fresh})[-3:]
        fresh = [i for i in fresh if i.date in recent]
    # +2 words per line: the date that follows each sentence counts against the budget
    sentences = [Sentence(0, i.order, "", i.text, len(i.text.split()) + 2) for i in fresh]
    chosen = {s.text for s in select(sentences, int(budget))} if sentences else set()
    picked = [i for i in fresh if i.text in chosen]  # a sentence cut to fit is not in `chosen`
    used.update(i.text for i in picked)
    return sorted(picked, key=lambda i: (i.date, i.order))


def _topics(items: list[_Item], known: dict[str, set[str]], budget: int, used: set[str]) -> list[str]:
    """Phrases said in several periods (or several sentences, when there is one period), each
    with the periods it comes up in and its most recent sentence."""
    dates: dict[str, set[str]] = {name: set(ds) for name, ds in known.items()}
    holders: dict[str, list[_Item]] = {}
    for item in items:
        for phrase in phrases(item.text):
            dates.setdefault(phrase, set()).add(item.date)
            holders.setdefault(phrase, []).append(item)
    several_periods = len({i.date for i in items}) > 1
    support = {p: len(ds) if several_periods else len(holders[p]) for p, ds in dates.items() if p in holders}
    # the phrase of the most periods first; among equals the longer (more specific) one
    lines: list[str] = []
    chosen: list[str] = []
    words = 0
    for phrase in sorted(support, key=lambda p: (-support[p], -p.count(" "), p)):
        if support[phrase] < 2 or len(chosen) == MOST_TOPICS:
            break
        if any(set(phrase.split()) & set(c.split()) for c in chosen):
            continue  # "marathon" beside "marathon training" says nothing more
        fresh = [i for i in holders[phrase] if i.text not in used]
        if not fresh:
            continue
        latest = max(fresh, key=lambda i: (i.date, i.order))
        periods = ", ".join(sorted(d for d in dates[phrase] if d))
        line = f"- {phrase} ({periods}): {latest.text} ({latest.date})"
        if words + len(line.split()) > budget:
            continue
        chosen.append(phrase)
        used.add(latest.text)
        lines.append(line)
        words += len(line.split())
    return lines


def _line(item: _Item) -> str:
    return f"- {item.text} ({item.date})"
