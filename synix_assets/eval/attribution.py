"""Where a missed question's evidence was lost: per evidence turn, the layers it survived into.

A question is missed when not every evidence turn is among the first k turns retrieved (strict
recall_all@k). For each evidence turn that was not, we follow it up the memory the pipeline
built, layer by layer above the transcripts (episodes, then rollups, then the core):

- the turn's *salient words* are its up to `SALIENT_WORDS` rarest words in the conversation
  (letters and digits, at least `MIN_LETTERS` long, not a stop word; rarity = how few of the
  case's turns use the word);
- the turn *survived into a layer* when an artifact of that layer derives from the turn's session
  (its provenance in the store reaches that session's transcript) and its text holds at least
  half of those words (a turn with no salient word survives wherever its session is in the
  provenance: there is nothing of it to lose);
- it was *lost at* the lowest layer it did not survive into; a turn that survived into every
  layer was lost by retrieval ("retrieval"), not by the summaries.
"""
from __future__ import annotations

import math
import re
from collections import Counter

from synix_assets.eval.data import Case
from synix_assets.eval.source import turn_map

SALIENT_WORDS = 8
MIN_LETTERS = 4
RETRIEVAL = "retrieval"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("""
about above after again against also because been before being below between both could does
doing down during each even ever every from further have having here hers herself himself into
itself just like many more most much must myself only other ought ours ourselves over really
same shall should some such than that their theirs them themselves then there these they this
those through under until very want well were what when where which while will with would your
yours yourself yourselves yeah okay thanks thank that's it's know think going sure great
""".split())


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _content_words(text: str) -> list[str]:
    return [w for w in dict.fromkeys(_WORD.findall(text.lower())) if len(w) >= MIN_LETTERS and w not in _STOP]


class Survival:
    """The layers above the transcripts of one built memory, and which evidence turns survived
    into each (see the module docstring)."""

    def __init__(self, case: Case, store):
        sessions = {cid: session for cid, (session, _) in turn_map(case).items()}
        turns = [t for s in case.sessions for t in s.turns]
        df = Counter(w for t in turns for w in set(_content_words(t.text)))
        self._session_of = {t.turn_id: s.session_id for s in case.sessions for t in s.turns}
        self._salient = {t.turn_id: sorted(_content_words(t.text), key=lambda w: (df[w], w))[:SALIENT_WORDS]
                         for t in turns}
        # layer → [(sessions it derives from, its words)], lowest level first
        levels: dict[str, int] = {}
        self.layers: dict[str, list[tuple[set[str], set[str]]]] = {}
        for layer in store.layers():
            for art in store.list_layer(layer):
                if art.level < 1:
                    continue
                levels[layer] = art.level
                leaves = store.leaves(art.artifact_id, max_depth=32, max_count=1_000_000)
                derived = {sessions[c] for c in (a.metadata.get("meta.chat.conversation_id") for a in leaves)
                           if c in sessions}
                self.layers.setdefault(layer, []).append((derived, words(art.content)))
        self.order = sorted(self.layers, key=lambda name: (levels[name], name))

    def survived(self, turn_id: str) -> dict[str, bool]:
        """layer → whether the turn survived into it, lowest layer first."""
        session = self._session_of.get(turn_id)
        salient = self._salient.get(turn_id, [])
        need = math.ceil(len(salient) / 2)
        return {layer: any(session in derived and sum(w in text for w in salient) >= need
                           for derived, text in self.layers[layer])
                for layer in self.order}

    def explain(self, evidence_turns, retrieved: list[str]) -> list[dict]:
        """One entry per evidence turn not among `retrieved`: its survival and where it was lost."""
        out = []
        for turn in evidence_turns:
            if turn in retrieved or turn not in self._session_of:
                continue
            survived = self.survived(turn)
            lost = next((layer for layer, kept in survived.items() if not kept), RETRIEVAL)
            out.append({"turn": turn, "salient": self._salient[turn], "survived": survived, "lost_at": lost})
        return out


def summarise(rows: list[dict]) -> dict:
    """Of the rows' missed questions: how many, how many evidence turns were missed, and where
    each was lost ({layer or "retrieval": turns}, layers lowest first, retrieval last); `layers`:
    the memory's layers above the transcripts, lowest first."""
    missed = [r for r in rows if r.get("attribution")]
    lost: Counter = Counter(a["lost_at"] for r in missed for a in r["attribution"])
    order = list(dict.fromkeys(layer for r in missed for a in r["attribution"] for layer in a["survived"]))
    return {"missed_questions": len(missed), "missed_turns": sum(lost.values()), "layers": order,
            "lost_at": {layer: lost[layer] for layer in [*order, RETRIEVAL] if layer in lost}}
