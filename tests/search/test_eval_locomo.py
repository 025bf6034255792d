"""LoCoMo evidence-recall eval on a tiny fixture whose answers are known."""
import json

import pytest

from synix_assets.eval.locomo import normalise_evidence, run_locomo_eval, session_docs

SAMPLE = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Alice", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Alice", "dia_id": "D1:1",
             "text": "Hi Bob, I adopted a puppy named Biscuit last week."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! I started learning the cello."},
            {"speaker": "Alice", "dia_id": "D1:3",
             "text": "My sister moved to Lisbon for a job in robotics."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Bob", "dia_id": "D2:1",
             "text": "I performed my first cello recital on Saturday."},
            {"speaker": "Alice", "dia_id": "D2:2", "text": "Look what Biscuit did!",
             "img_url": ["http://example.invalid/x.jpg"], "blip_caption": "a dog chewing a boot"},
            {"speaker": "Bob", "dia_id": "D2:3", "text": "I am reading a novel about volcanoes."},
        ],
        # A date key with no session (as in conv-26): must be ignored.
        "session_3_date_time": "9:00 am on 1 July, 2023",
    },
    "qa": [
        {"question": "What is the name of Alice's puppy?", "answer": "Biscuit",
         "evidence": ["D1:1"], "category": 4},
        {"question": "Where did Alice's sister move?", "answer": "Lisbon",
         "evidence": ["D1:3"], "category": 1},
        {"question": "When did Bob perform a cello recital?", "answer": "June 2023",
         "evidence": ["D2:1; D1:2"], "category": 2},  # two ids in one string
        {"question": "What did the dog chew?", "answer": "a boot",
         "evidence": ["D2:2"], "category": 4},  # only the photo caption says it
        {"question": "What year is the volcano novel set?", "answer": 2022,
         "evidence": ["D2:03"], "category": 2},  # leading zero, integer answer
        {"question": "Which musical hobby was picked up?", "answer": "cello",
         "evidence": ["D1:2"], "category": 4},  # no shared word: a known miss for FTS
        {"question": "Would Alice likely travel?", "answer": "Likely yes",
         "evidence": [], "category": 3},  # empty evidence: skipped
        {"question": "What is Alice's job?", "answer": "unknown",
         "evidence": ["D", "D9:9"], "category": 1},  # nothing valid: skipped, 2 dropped
        {"question": "What did Bob adopt?", "adversarial_answer": "a puppy",
         "evidence": ["D1:1"], "category": 5},  # adversarial: excluded
    ],
}


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps([SAMPLE]))
    return path


def test_fts_recall_on_known_answers_is_exact(locomo_file, tmp_path):
    result = run_locomo_eval(locomo_file, modes=("fts",), index_dir=tmp_path / "idx")
    assert result["questions"] == 6
    assert result["skipped_questions"] == 2
    assert result["dropped_evidence_ids"] == 2
    fts = result["modes"]["fts"]
    for k in (1, 5, 10):
        assert fts[f"session_recall@{k}"] == round(5 / 6, 4)
        assert fts[f"turn_recall@{k}"] == round(5 / 6, 4)
    assert fts["by_category"]["4"]["questions"] == 3
    assert fts["by_category"]["4"]["turn_recall@1"] == round(2 / 3, 4)
    assert fts["by_category"]["2"]["turn_recall@1"] == 1.0
    assert fts["by_category"]["1"]["session_recall@5"] == 1.0
    assert fts["by_category"]["3"]["questions"] == 0
    assert fts["p50_ms"] >= 0 and fts["p95_ms"] >= fts["p50_ms"]


def test_result_has_every_mode_and_metric(locomo_file, tmp_path):
    result = run_locomo_eval(locomo_file, index_dir=tmp_path / "idx")
    assert set(result["modes"]) == {"fts", "semantic", "hybrid"}
    for entry in result["modes"].values():
        for key in ("session_recall@1", "session_recall@5", "session_recall@10",
                    "turn_recall@1", "turn_recall@5", "turn_recall@10", "p50_ms", "p95_ms"):
            assert key in entry
        assert set(entry["by_category"]) == {"1", "2", "3", "4"}


def test_sessions_become_transcripts_that_keep_dates_and_turn_ids():
    docs = session_docs(SAMPLE)
    assert [d.artifact_id for d in docs] == ["conv-test/session_1", "conv-test/session_2"]
    assert docs[0].date == "2023-05-08T13:56:00"
    assert [m["id"] for m in docs[1].messages] == ["D2:1", "D2:2", "D2:3"]
    assert "[shares photo: a dog chewing a boot]" in docs[1].messages[1]["text"]
    assert docs[1].sources[0]["message_range"] == [0, 2]


def test_evidence_ids_are_normalised_and_invalid_ones_counted():
    valid = {"D1:1", "D1:2", "D9:1", "D4:4", "D30:5"}
    assert normalise_evidence(["D1:1; D1:2"], valid) == (["D1:1", "D1:2"], 0)
    assert normalise_evidence(["D9:1 D4:4 D4:6"], valid) == (["D9:1", "D4:4"], 1)
    assert normalise_evidence(["D30:05", "D", "D:11:26"], valid) == (["D30:5"], 2)
    assert normalise_evidence([], valid) == ([], 0)
