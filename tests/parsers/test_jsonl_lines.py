"""Issue 40: a ChatGPT, Claude or Open WebUI export saved one conversation per line (`.jsonl`)
is read line by line. A line cut off in the middle, or one that is not JSON, is skipped with one
line naming the file and the line number; every other line builds."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from synix_assets.parsers.detect import parse_file

DATA = Path("/work/shared/data/chatgpt/librechat__chatgpt-export.json")


def _conversation(cid: str, text: str) -> str:
    node = {"id": "a", "parent": None, "children": [], "message": {
        "id": "a", "author": {"role": "user"}, "create_time": 1700000100,
        "content": {"content_type": "text", "parts": [text]}}}
    return json.dumps({"id": cid, "title": f"talk {cid}", "create_time": 1700000000,
                       "mapping": {"a": node}, "current_node": "a"})


def _lines() -> list[str]:
    return [_conversation(f"c{i}", f"we talked about topic {i}") for i in range(1, 4)]


def _parse(path: Path, caplog):
    with caplog.at_level(logging.WARNING, logger="synix.parsers"):
        conversations, report = parse_file(path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return [c.conversation_id for c in conversations], report, warnings


def test_a_line_cut_in_the_middle_is_skipped_naming_file_and_line_and_the_rest_builds(tmp_path, caplog):
    lines = _lines()
    lines[1] = lines[1][: len(lines[1]) // 2]  # cut inside a string: its quote never closes
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ids, report, warnings = _parse(path, caplog)
    assert ids == ["c1", "c3"]
    assert [why for _, why in report.skipped] == ["line 2 is cut off"]
    assert len(warnings) == 1 and warnings[0].startswith(f"{path}: skipped conversation ")
    assert warnings[0].endswith(": line 2 is cut off")


def test_a_last_line_cut_off_costs_that_line_only(tmp_path, caplog):
    lines = _lines()
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(lines) + "\n" + lines[0][:40], encoding="utf-8")
    ids, report, _ = _parse(path, caplog)
    assert ids == ["c1", "c2", "c3"]
    assert report.skipped == [("c1", "line 4 is cut off")]  # named by the id it still holds


def test_a_line_that_is_not_json_is_skipped_by_its_line_number(tmp_path, caplog):
    lines = _lines()
    lines.insert(1, '{"id": "broken", "title": oops}')
    lines.insert(3, '{"id": "two"} {"id": "values"}')
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")  # blank lines between: counted
    ids, report, warnings = _parse(path, caplog)
    assert ids == ["c1", "c2", "c3"]
    assert report.skipped == [
        ("broken", "line 3 is not valid JSON (Expecting value)"),
        ("two", "line 7 holds 2 JSON values, not one")]
    assert len(warnings) == 2


def test_a_real_export_written_as_lines_with_its_first_line_cut_builds_the_second(tmp_path, caplog):
    conversations = json.loads(DATA.read_text(encoding="utf-8"))
    first, second = (json.dumps(c) for c in conversations)
    path = tmp_path / "export.jsonl"
    path.write_text(first[: len(first) // 2] + "\n" + second + "\n", encoding="utf-8")
    ids, report, _ = _parse(path, caplog)
    assert ids == [conversations[1]["id"]]
    assert [why for _, why in report.skipped] == ["line 1 is cut off"]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_single_pretty_printed_conversation_is_still_one_conversation_in_a_json_file(tmp_path, caplog, suffix):
    path = tmp_path / f"one{suffix}"
    path.write_text(json.dumps(json.loads(_lines()[0]), indent=2), encoding="utf-8")
    ids, report, _ = _parse(path, caplog)
    if suffix == ".json":
        assert ids == ["c1"] and report.skipped == []
    else:  # a .jsonl is one value per line: a value spread over lines is not one
        assert ids == [] and report.skipped and report.skipped[0][1] == "line 1 is cut off"
