"""Gemini CLI chat recordings (`session-*.json`) and prompt logs (`logs.json`): the real files of
../shared/data/gemini-cli parse to what its README states, and damaged ones cost one line each."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from synix_assets.parsers.detect import detect_format, iter_conversations, parse_file
from synix_assets.sources.model import summarise
from synix_assets.sources.reader import dedupe
from synix_resources.errors import ExportFormatError
from tests.support import corpus

DATA = corpus.DATA / "gemini-cli"
SESSION = DATA / "codemie-ai-codemie-code__tests_integration_metrics_fixtures_gemini_session-2025-12-01T21-45-5b959dae.json"
LOGS = DATA / "codemie-ai-codemie-code__tests_integration_metrics_fixtures_gemini_logs.json"
SID = "5b959dae-8655-4cd1-b10f-720b8c336ea2"


@pytest.mark.corpus
def test_recording_is_one_session_with_three_prompts_and_eleven_answers():
    [conv], report = parse_file(SESSION)
    assert detect_format(SESSION) == "gemini-cli" and conv.source_format == "gemini-cli"
    assert conv.conversation_id == SID and conv.title == "hi"
    roles = Counter(m.role for m in conv.messages)
    # 8 of the 11 gemini messages only call tools: their results follow as a tool message each
    assert roles == {"user": 3, "assistant": 11, "tool": 8}
    assert (report.conversations, report.messages, report.skipped) == (1, 22, [])
    assert (conv.created_at, conv.updated_at) == ("2025-12-01T21:45:34Z", "2025-12-01T21:50:10Z")
    assert conv.metadata["model"] == "gemini-3-pro-image-preview"
    assert conv.metadata["project_hash"].startswith("fb8e242a")
    assert conv.messages[0].message_id == "aa4e1408-dfa9-4337-8768-70d6d3f17129"


@pytest.mark.corpus
def test_recording_keeps_every_tool_call_and_result_and_thoughts_out_of_the_text():
    [conv], _ = parse_file(SESSION)
    text = conv.transcript()
    assert Counter(re.findall(r"\[tool use: (\w+)\]", text)) == {
        "read_file": 7, "list_directory": 1, "write_file": 1, "replace": 1}
    assert text.count("[tool result]") == 10 and "(error)" not in text
    # write_file has no resultDisplay: its result text comes from the function response
    assert "[tool result] Successfully created and wrote to new file" in text
    thoughts = [t for m in conv.messages for t in m.metadata.get("thinking", [])]
    assert len(thoughts) == 18
    assert not any(t.split(": ", 1)[1].startswith("\\n") for t in thoughts)  # literal \n cleaned
    assert not any(t.split(": ", 1)[0] in text for t in thoughts[:3])


@pytest.mark.corpus
def test_prompt_log_is_the_session_prompts_and_the_merge_prefers_the_recording():
    [log], report = parse_file(LOGS)
    assert detect_format(LOGS) == "gemini-cli" and report.format == "gemini-cli"
    assert log.conversation_id == SID and [m.role for m in log.messages] == ["user"] * 3
    assert log.messages[1].text == "Explain what this is" and log.metadata["prompt_log"] is True
    [full], _ = parse_file(SESSION)
    chosen = dedupe([summarise(log, "h", "gemini-cli"), summarise(full, "h", "gemini-cli")],
                    dedupe="metadata_match", conflict="prefer_latest")
    [[kept]] = chosen.values()
    assert kept.message_count == 22


def _session(messages, **top) -> dict:
    return {"sessionId": "s1", "projectHash": "ab" * 32, "startTime": "2025-12-01T21:45:34.362Z",
            "lastUpdated": "2025-12-01T21:50:10.837Z", "messages": messages, **top}


def _msg(mid: str, kind: str, content="", **extra) -> dict:
    return {"id": mid, "timestamp": "2025-12-01T21:46:00.000Z", "type": kind, "content": content, **extra}


def _write(tmp_path: Path, value, name: str = "session-2025-12-01T21-45-s1.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=2))
    return path


def test_a_recording_cut_off_mid_rewrite_is_refused_before_anything_is_yielded(tmp_path):
    text = json.dumps(_session([_msg("u", "user", "hello"), _msg("g", "gemini", "hi")]), indent=2)
    path = tmp_path / "session.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ExportFormatError) as info:
        next(iter_conversations(path))
    assert "truncated" in info.value.one_line() and "still being written" in info.value.one_line()


@pytest.mark.parametrize("damage, cause", [
    (lambda s: s.replace('"hello"', "[" * 3000 + "]" * 3000), "is nested more than 100 levels deep"),
    (lambda s: s.replace('"hello"', '"\\udcff"'), "has a lone surrogate escape"),
    (lambda s: s.replace('"2025-12-01T21:45:34.362Z"', "NaN"), "startTime is NaN"),
    (lambda s: s.replace('"messages": [', '"messages": {"x": [').replace("]\n}", "]}\n}"), "has no messages list"),
])
def test_a_damaged_recording_is_one_skipped_line(tmp_path, damage, cause):
    text = json.dumps(_session([_msg("u", "user", "hello"), _msg("g", "gemini", "hi")]), indent=2)
    path = tmp_path / "session-s1.json"
    path.write_text(damage(text))
    convs, report = parse_file(path, format="gemini-cli")
    assert convs == [] and len(report.skipped) == 1 and cause in report.skipped[0][1]


def test_bytes_that_are_not_utf8_refuse_the_recording(tmp_path):
    path = tmp_path / "session.json"
    path.write_bytes(json.dumps(_session([_msg("u", "user", "caf")])).encode().replace(b"caf", b"caf\xe9"))
    with pytest.raises(ExportFormatError, match="not valid UTF-8"):
        parse_file(path)


def test_repeated_message_ids_notices_and_failed_calls_are_counted_or_marked(tmp_path):
    call = {"id": "read_file-1-a", "name": "read_file", "args": {"file_path": "x"}, "status": "error",
            "result": [{"functionResponse": {"id": "read_file-1-a", "name": "read_file",
                                             "response": {"error": "File not found"}}}]}
    cancelled = {**call, "id": "c2", "status": "cancelled", "result": []}
    path = _write(tmp_path, _session([
        _msg("u", "user", "read x"), _msg("u", "user", "duplicate of u"),
        _msg("n", "info", "Request cancelled."),
        _msg("g", "gemini", "", toolCalls=[call, cancelled], thoughts=[{"subject": "Plan", "description": "read it"}]),
        _msg("g2", "gemini", "It does not exist.")]))
    [conv], report = parse_file(path)
    assert report.skipped == []
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[2].text.splitlines() == ["[tool result (error)] File not found",
                                                  "[tool result (cancelled)]"]
    assert conv.messages[1].metadata["thinking"] == ["Plan: read it"]
    assert conv.metadata["not_in_transcript"] == {"info notice": 1, "repeated message id": 1}


def test_a_damaged_prompt_log_entry_costs_its_session_only(tmp_path):
    entries = [{"sessionId": "a", "messageId": 0, "type": "user", "message": "first", "timestamp": "2025-12-01T21:45:34.356Z"},
               {"sessionId": "b", "messageId": 0, "type": "user", "message": "\udcff", "timestamp": "2025-12-01T21:46:00Z"},
               {"sessionId": "a", "messageId": 1, "type": "user", "message": "second", "timestamp": "2025-12-01T21:47:00Z"}]
    path = tmp_path / "logs.json"
    path.write_text(json.dumps(entries))
    convs, report = parse_file(path)
    assert [(c.conversation_id, [m.text for m in c.messages]) for c in convs] == [("a", ["first", "second"])]
    assert len(report.skipped) == 1 and report.skipped[0][0] == "b"
    assert "lone surrogate" in report.skipped[0][1]
