"""Where a missed question's evidence was lost (attribution.py) and the run's progress with its
ETA (progress.py): the logic on small generated cases and fake stores."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from synix_assets.eval import attribution
from synix_assets.eval.data import Case, Question, Session, Turn
from synix_assets.eval.progress import Clock, Printer, Progress
from synix_assets.eval.report import attribution_rows, markdown
from synix_assets.eval.runner import summarise_rows
from synix_assets.eval.source import conversation_id


def _case() -> Case:
    s1 = Session("session_1", "2023-01-08T00:00:00Z", (
        Turn("D1:1", "Alice", "user", "I adopted a puppy named Biscuit from the shelter downtown."),
        Turn("D1:2", "Bob", "assistant", "Congratulations! I started taking cello lessons on Tuesdays.")))
    s2 = Session("session_2", "2023-03-20T00:00:00Z", (
        Turn("D2:1", "Bob", "user", "My glacier hike across Iceland was freezing and wonderful."),
        Turn("D2:2", "Alice", "assistant", "Pottery class downtown taught me glazing techniques.")))
    q = Question("q1", "What did they do?", "1", "", ("session_1", "session_2"), ("D1:1", "D1:2", "D2:1", "D2:2"))
    return Case("conv-x", [s1, s2], [q])


@dataclass
class _Art:
    artifact_id: str
    level: int
    content: str
    metadata: dict = field(default_factory=dict)


class _FakeStore:
    """The three reads Survival makes: layers, their current artifacts, and an artifact's leaves."""

    def __init__(self, arts: dict[str, list[tuple[_Art, list[str]]]]):
        self.arts = arts
        self.leaf_of = {a.artifact_id: leaves for items in arts.values() for a, leaves in items}

    def layers(self):
        return {name: {} for name in self.arts}

    def list_layer(self, layer):
        return [a for a, _ in self.arts[layer]]

    def leaves(self, artifact_id, max_depth=10, max_count=0):
        return [_Art(f"t/{s}", 0, "", {"meta.chat.conversation_id": conversation_id("conv-x", s)})
                for s in self.leaf_of[artifact_id]]


def _store() -> _FakeStore:
    transcripts = [(_Art("t1", 0, "…"), ["session_1"]), (_Art("t2", 0, "…"), ["session_2"])]
    # the Pottery turn's words appear only in session 1's episode: no provenance to its session
    episodes = [(_Art("e1", 1, "Alice adopted a puppy named Biscuit from the shelter. Bob takes cello lessons "
                                "on Tuesdays. Pottery class downtown taught glazing techniques."), ["session_1"]),
                (_Art("e2", 1, "Bob: glacier hike across Iceland, freezing and wonderful."), ["session_2"])]
    monthly = [(_Art("m1", 2, "January: Alice adopted Biscuit, a shelter puppy. Bob: cello lessons Tuesdays."),
                ["session_1"]),
               (_Art("m3", 2, "March: a trip."), ["session_2"])]
    core = [(_Art("c", 3, "Alice has a puppy, Biscuit, adopted from a shelter downtown."), ["session_1", "session_2"])]
    return _FakeStore({"transcripts": transcripts, "episodes": episodes, "monthly": monthly, "core": core})


def test_a_missed_turn_is_lost_at_the_lowest_layer_that_does_not_hold_its_salient_words_from_its_session():
    survival = attribution.Survival(_case(), _store())
    assert survival.order == ["episodes", "monthly", "core"]  # levels, lowest first; transcripts are the source
    by_turn = {a["turn"]: a for a in survival.explain(("D1:1", "D1:2", "D2:1", "D2:2"), retrieved=[])}
    assert by_turn["D1:1"]["survived"] == {"episodes": True, "monthly": True, "core": True}
    assert by_turn["D1:1"]["lost_at"] == "retrieval"  # it reached the core: the search missed it
    assert by_turn["D1:2"]["survived"] == {"episodes": True, "monthly": True, "core": False}
    assert by_turn["D1:2"]["lost_at"] == "core"
    assert by_turn["D2:1"]["lost_at"] == "monthly"  # the March rollup dropped the glacier hike
    # its words are in session 1's episode, which does not derive from session 2: lost at once
    assert by_turn["D2:2"]["survived"]["episodes"] is False and by_turn["D2:2"]["lost_at"] == "episodes"
    assert "glazing" in by_turn["D2:2"]["salient"]


def test_only_evidence_turns_that_were_not_retrieved_are_explained():
    survival = attribution.Survival(_case(), _store())
    explained = survival.explain(("D1:1", "D2:1"), retrieved=["D1:1", "D9:9"])
    assert [a["turn"] for a in explained] == ["D2:1"]


def _row(category: str, lost: list[str], turn_all: float) -> dict:
    scores = {"any@10": 1.0, "all@10": turn_all, "ndcg@10": 1.0}
    return {"system": "memory", "mode": "fts", "category": category, "ms": 1.0, "layers": [],
            "scores": {"session": scores, "turn": scores},
            "attribution": [{"turn": f"t{i}", "salient": [], "lost_at": layer,
                             "survived": {"episodes": layer != "episodes", "monthly": layer not in ("episodes", "monthly"),
                                          "core": layer == "retrieval"}}
                            for i, layer in enumerate(lost)] or None}


def test_the_summary_and_report_count_missed_turns_by_the_layer_they_were_lost_at_per_category():
    rows = [_row("1", ["retrieval", "episodes"], 0.0), _row("1", ["core"], 0.0), _row("4", [], 1.0)]
    summary = summarise_rows(rows, ks=(10,))["memory"]["fts"]
    assert summary["attribution"] == {"missed_questions": 2, "missed_turns": 3,
                                      "layers": ["episodes", "monthly", "core"],
                                      "lost_at": {"episodes": 1, "core": 1, "retrieval": 1}}
    assert list(summary["attribution"]["lost_at"]) == ["episodes", "core", "retrieval"]  # lowest layer first
    assert summary["by_category"]["4"]["attribution"]["missed_questions"] == 0
    entry = {"run": {"benchmark": "locomo", "branch": "main", "data_hash": "h"}, "systems": {"memory": {"fts": summary}}}
    head, body = attribution_rows([{"benchmark": "locomo", "system": "main", "mode": "fts", **summary}])
    assert head[4:] == ["missed q", "missed turns", "lost at episodes", "lost at monthly", "lost at core",
                        "lost at retrieval"]
    assert body[0][3:] == ["1", "2", "3", "1", "0", "1", "1"] and body[-1][3] == "all"
    text = markdown([entry])
    assert "## Where the misses were lost" in text and "| S all@5 |" in text and "| T all@10 |" in text


def test_no_eta_is_given_until_a_build_and_a_question_have_both_been_timed():
    seen: list[Progress] = []
    clock = Clock(builds_total=2, questions_total=10, notify=seen.append)
    clock.tell("build", "conv-a")
    assert seen[-1].eta_s is None
    clock.build_done(60.0, "conv-a")
    assert seen[-1].eta_s is None  # the questions' cost is not known yet
    clock.questions_asked(1, 0.5)
    assert seen[-1].eta_s == pytest.approx(1 * 60.0 + 9 * 0.5)
    for _ in range(4):
        clock.questions_asked(1, 0.5)
    clock.build_done(40.0, "conv-b")
    assert seen[-1].eta_s == pytest.approx(0 * 50.0 + 5 * 0.5)  # builds done; 5 questions left


def test_build_time_does_not_inflate_the_per_question_estimate():
    clock = Clock(builds_total=1, questions_total=100)
    clock.build_done(100.0, "conv-a")
    clock.questions_asked(1, 0.05)
    # the old ETA divided the whole elapsed time (the build's too) by the questions done: ~9,900 s
    assert clock.eta_s() == pytest.approx(99 * 0.05)


def test_progress_lines_name_the_branch_being_built_and_throttle_only_the_question_lines():
    lines: list[str] = []
    printer = Printer(lines.append)
    clock = Clock(builds_total=1, questions_total=3, notify=printer)
    clock.branch = "main"
    clock.tell("build", "conv-26 (case 1/1) through the pipeline")
    clock.build_done(30.0, "conv-26 (case 1/1): 0 LLM calls")
    for _ in range(3):
        clock.questions_asked(1, 0.01)
    assert lines[0].startswith("branch main: building conv-26 (case 1/1) through the pipeline (memories built 0/1")
    assert lines[1].startswith("branch main: built conv-26") and "memories built 1/1" in lines[1]
    assert lines[-1].startswith("branch main: questions 3/3") and "ETA 0 s" in lines[-1]
    assert len([line for line in lines if "questions" in line]) == 2  # the first, then the last
