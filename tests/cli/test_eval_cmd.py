"""`synix eval locomo` on a tiny LoCoMo-shaped file whose recall is known by construction."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from synix_assets.cli.main import main
from synix_resources.search.embeddings import embeddings_available

SAMPLE = {
    "sample_id": "conv-cli",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten called Pepper."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice! I bought a red kayak."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I paddled the kayak across the lake."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "My brother opened a bakery in Porto."},
        ],
    },
    "qa": [
        {"question": "What is the name of Ana's kitten?", "answer": "Pepper",
         "evidence": ["D1:1"], "category": 4},
        {"question": "Where is the bakery?", "answer": "Porto", "evidence": ["D2:2"],
         "category": 1},
        {"question": "Which pastime involves water?", "answer": "kayaking",
         "evidence": ["D1:2"], "category": 3},  # no shared content word: a full-text miss
        {"question": "Is this adversarial?", "evidence": ["D1:1"], "category": 5},  # excluded
    ],
}


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([SAMPLE]))
    return path


def run(*args):
    return CliRunner().invoke(main, ["eval", "locomo", *args], catch_exceptions=True)


def test_json_has_one_object_with_known_recall(data_file):
    result = run("--data", str(data_file), "--modes", "fts", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["questions"] == 3 and list(out["modes"]) == ["fts"]
    fts = out["modes"]["fts"]
    assert fts["session_recall@1"] == round(2 / 3, 4)
    assert fts["turn_recall@10"] == round(2 / 3, 4)
    assert fts["by_category"]["3"]["turn_recall@10"] == 0.0
    assert fts["by_category"]["4"]["turn_recall@1"] == 1.0
    assert fts["p95_ms"] >= fts["p50_ms"] >= 0


def test_json_reports_every_metric_for_each_requested_mode(data_file):
    result = run("--data", str(data_file), "--modes", "fts,hybrid", "--json")
    out = json.loads(result.stdout)
    assert list(out["modes"]) == ["fts", "hybrid"]
    for entry in out["modes"].values():
        assert {"session_recall@1", "session_recall@5", "session_recall@10", "turn_recall@1",
                "turn_recall@5", "turn_recall@10", "p50_ms", "p95_ms",
                "by_category"} <= set(entry)
        assert set(entry["by_category"]) == {"1", "2", "3", "4"}


@pytest.mark.skipif(not embeddings_available(), reason="embedding model not installed")
def test_hybrid_finds_the_paraphrased_evidence_full_text_misses(data_file):
    out = json.loads(run("--data", str(data_file), "--modes", "hybrid", "--json").stdout)
    assert out["modes"]["hybrid"]["turn_recall@10"] == 1.0  # 4 turns: all are in the top 10


def test_table_lists_each_mode(data_file):
    result = run("--data", str(data_file), "--modes", "fts")
    assert result.exit_code == 0, result.output
    assert "LoCoMo" in result.stdout and "fts" in result.stdout and "S@5" in result.stdout


@pytest.mark.parametrize("content, needle", [
    (None, "no such file"),
    ("{not json", "not a readable LoCoMo JSON file"),
    ('{"a": 1}', "not LoCoMo data"),
    ('[{"conversation": "x"}]', "not LoCoMo data"),
])
def test_bad_file_is_one_clean_line(tmp_path, content, needle):
    path = tmp_path / "data.json"
    if content is not None:
        path.write_text(content)
    result = run("--data", str(path), "--modes", "fts")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]
    assert "Traceback" not in result.output


def test_unknown_mode_is_a_usage_error(data_file):
    result = run("--data", str(data_file), "--modes", "fts,bm25")
    assert result.exit_code == 2 and "'bm25' is not a mode" in result.stderr


def test_help_shows_an_example():
    result = CliRunner().invoke(main, ["eval", "locomo", "--help"])
    assert result.exit_code == 0 and "synix eval locomo --data" in result.stdout
