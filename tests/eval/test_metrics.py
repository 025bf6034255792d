"""Per-question retrieval metrics on hand-computed rankings."""
import math

import pytest

from synix_assets.eval.metrics import freshness, question_scores, summarise


def test_recall_any_all_and_ndcg_follow_the_longmemeval_definitions():
    s = question_scores(["a", "b"], ["x", "a", "y", "b"], [1, 2, 5])
    assert (s["any@1"], s["any@2"], s["all@2"], s["all@5"]) == (0.0, 1.0, 0.0, 1.0)
    ideal = 1 + 1 / math.log2(3)
    assert s["ndcg@5"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal, abs=1e-6)
    assert question_scores(["a"], ["a"], [1])["ndcg@1"] == 1.0


def test_freshness_wants_the_newest_evidence_ahead_of_the_older():
    dates = {"old": "2023-01-01", "new": "2023-04-01", "x": "2023-02-01"}
    assert freshness(["old", "new"], ["x", "new", "old"], dates, 10) == 1.0
    assert freshness(["old", "new"], ["old", "new"], dates, 10) == 0.0
    assert freshness(["old", "new"], ["old", "x"], dates, 10) == 0.0
    assert freshness(["new"], ["new"], dates, 10) is None  # one date: does not apply


def test_summary_keeps_todays_metric_names_and_skips_unscored_rows():
    row = {"scores": {"session": question_scores(["a"], ["a"], [1, 5, 10]),
                      "turn": question_scores(["t"], ["u", "t"], [1, 5, 10])},
           "ms": 3.0, "layers": ["episodes"], "hits_checked": 2, "hits_complete": 2, "category": "4"}
    out = summarise([row, {"scores": None, "ms": 0.0, "category": "4"}])
    assert out["session_recall@1"] == 1.0 and out["turn_recall@1"] == 0.0 and out["turn_recall@5"] == 1.0
    assert out["provenance_complete"] == 1.0 and out["altitude_top1"] == {"episodes": 1}
    assert out["questions"] == 2 and out["p50_ms"] == 3.0
