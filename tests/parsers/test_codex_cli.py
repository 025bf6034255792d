"""Codex CLI / Codex app rollouts (`rollout-*.jsonl`): the real files of ../shared/data/codex-cli
parse to what its README states, and damaged rollouts cost one line each."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from synix_assets.parsers.detect import detect_format, iter_conversations, parse_file
from synix_resources.errors import ExportFormatError
from tests.support import corpus

DATA = corpus.DATA / "codex-cli"
CLI = DATA / ("codemie-ai-codemie-code__tests_integration_metrics_fixtures_codex_sessions_2026_01_02_"
              "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl")
DESKTOP = DATA / ("codemie-ai-codemie-code__src_agents_plugins_codex___tests___fixtures_"
                  "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
SID = "019b7f94-51b4-7593-922e-ba12b5b73b52"


def _tools(text: str) -> Counter:
    return Counter(re.findall(r"\[tool use: (\w+)\]", text))


@pytest.mark.corpus
def test_cli_rollout_is_one_session_with_one_typed_prompt_and_its_git_and_model():
    [conv], report = parse_file(CLI)
    assert detect_format(CLI) == "codex-cli" and report.format == "codex-cli"
    assert conv.conversation_id == SID and conv.source_format == "codex-cli"
    # the AGENTS.md and <environment_context> user items are injected context, not turns
    assert [m.role for m in conv.messages if m.role == "user"] == ["user"]
    assert conv.messages[0].text == "what is current repository about? summarize purpuse and explain goals"
    assert conv.title == conv.messages[0].text
    assert conv.created_at == "2026-01-02T16:39:45Z"  # session_meta is UTC; the file name is local time
    meta = conv.metadata
    assert meta["cwd"].endswith("/codemie-code") and meta["gitBranch"] == "codex"
    assert meta["repository"] == "git@github.com:codemie-ai/codemie-code.git"
    assert meta["model"] == "gpt-5-1-codex-2025-11-13" and meta["cli_version"] == "0.77.0"
    assert meta["originator"] == "codex_exec"
    counted = meta["not_in_transcript"]
    assert counted["injected context"] == 2 and counted["ghost_snapshot"] == 1
    assert counted["encrypted reasoning"] == 2 and counted["token_count"] == 6


@pytest.mark.corpus
def test_cli_rollout_that_stops_mid_turn_keeps_calls_results_and_readable_reasoning():
    [conv], report = parse_file(CLI)
    assert (report.conversations, report.messages, report.skipped) == (1, 7, [])
    assert [m.role for m in conv.messages] == ["user"] + ["assistant", "tool"] * 3
    text = conv.transcript()
    assert _tools(text) == {"shell": 3} and text.count("[tool result]") == 3
    # 0.77 wraps output as JSON {output, metadata}: the output text is shown, not the wrapper
    assert "[tool result] docs/AGENTS.md" in text and '"exit_code"' not in text
    reasoning = [r for m in conv.messages for r in m.metadata.get("reasoning", [])]
    assert len(reasoning) == 1 and reasoning[0].startswith("**Clarifying documentation instructions**")
    assert "Clarifying documentation" not in text  # reasoning stays out of the text
    assert conv.messages[-1].role == "tool"  # no answer was ever written


@pytest.mark.corpus
def test_desktop_rollout_takes_its_prompts_from_user_message_events():
    [conv], report = parse_file(DESKTOP)
    users = [m for m in conv.messages if m.role == "user"]
    answers = [m for m in conv.messages if m.role == "assistant" and not m.text.startswith("[tool use")]
    assert len(users) == 3 and len(answers) == 3
    assert users[0].text.startswith("# Files mentioned by the user:")
    assert conv.title.startswith("analyze trascript and summarzie action items")  # the request, not the preamble
    text = conv.transcript()
    assert _tools(text) == {"exec_command": 35, "js": 3} and text.count("[tool result") == 38
    assert "Chunk ID:" not in text  # the output header is read for the exit code, then dropped
    assert conv.metadata["originator"] == "Codex Desktop" and "model" not in conv.metadata
    assert conv.metadata["not_in_transcript"]["encrypted reasoning"] == 16
    assert all(len(line) < 200 for m in conv.messages if m.role == "tool" for line in m.text.splitlines())
    assert (report.conversations, report.skipped) == (1, [])


def _rollout(tmp_path: Path, lines: list, name: str = f"rollout-2026-01-02T18-39-45-{SID}.jsonl",
             ending: bytes = b"\n") -> Path:
    path = tmp_path / name
    raw = b"\n".join(line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines)
    path.write_bytes(raw + ending)
    return path


def _record(kind: str, payload: dict, stamp: str = "2026-01-02T16:40:00.000Z") -> dict:
    return {"timestamp": stamp, "type": kind, "payload": payload}


META = _record("session_meta", {"id": SID, "timestamp": "2026-01-02T16:39:45.332Z", "cwd": "/w"})
ASK = _record("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "fix the build"}]})
ANSWER = _record("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "done"}]})


def test_a_session_whose_last_line_is_still_being_written_is_refused_before_anything_is_yielded(tmp_path):
    path = _rollout(tmp_path, [META, ASK, json.dumps(ANSWER).encode()[:40]], ending=b"")
    with pytest.raises(ExportFormatError) as info:
        next(iter_conversations(path))
    assert "cut off" in info.value.one_line() and "still being written" in info.value.one_line()
    assert str(path) in info.value.one_line()


@pytest.mark.parametrize("bad, cause", [
    (b'{"timestamp": "2026-01-02T16:40:00Z", "type": "response_item", "payload": {"type": ', "line 3 is not valid JSON"),
    (b'{"type": "event_msg", "payload": ' + b"[" * 5000 + b"]" * 5000 + b"}", "line 3 is nested more than 100 levels deep"),
    (b'{"type": "event_msg", "payload": {"type": "user_message", "message": "\\udcff"}}', "line 3 has a lone surrogate"),
    (b"[1, 2]", "line 3 is a list, not an object"),
])
def test_a_damaged_line_costs_its_session_one_line_naming_the_cause(tmp_path, bad, cause):
    path = _rollout(tmp_path, [META, ASK, bad, ANSWER])
    convs, report = parse_file(path)
    assert convs == [] and len(report.skipped) == 1
    assert report.skipped[0][0] == SID and report.skipped[0][1].startswith(cause)


def test_bytes_that_are_not_utf8_refuse_the_file_with_one_line(tmp_path):
    bad = json.dumps(ANSWER).encode().replace(b"done", b"d\xffne")
    near = _rollout(tmp_path, [META, ASK, bad], name="near.jsonl")
    with pytest.raises(ExportFormatError, match="is not valid UTF-8"):
        parse_file(near)
    far = _rollout(tmp_path, [META] + [ASK] * 600 + [bad])  # past the up-front check of the head
    with pytest.raises(ExportFormatError, match="line 602 is not valid UTF-8"):
        parse_file(far)


def test_repeated_call_ids_and_a_repeated_session_meta_are_counted_not_fatal(tmp_path):
    call = _record("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                     "arguments": '{"command": ["ls"]}'})
    out = _record("response_item", {"type": "function_call_output", "call_id": "c1",
                                    "output": "Process exited with code 2\nOutput:\nno such file\n"})
    other_meta = _record("session_meta", {"id": "another", "timestamp": "2026-01-02T17:00:00Z"})
    path = _rollout(tmp_path, [META, ASK, call, out, call, out, other_meta, ANSWER])
    [conv], report = parse_file(path)
    assert conv.conversation_id == SID and report.skipped == []
    assert conv.metadata["not_in_transcript"]["repeated call id"] == 1
    assert conv.metadata["not_in_transcript"]["repeated session_meta"] == 1
    assert "[tool result (error)] no such file" in conv.transcript()  # exit code 2
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


def test_an_older_rollout_without_the_envelope_is_read(tmp_path):
    lines = [{"id": SID, "timestamp": "2025-06-01T10:00:00Z", "instructions": "be brief"},
             {"record_type": "state"},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}]
    path = _rollout(tmp_path, lines)
    assert detect_format(path) == "codex-cli"
    [conv], _ = parse_file(path, format="codex-cli")
    assert [(m.role, m.text) for m in conv.messages] == [("user", "hello"), ("assistant", "hi")]
    assert conv.created_at == "2025-06-01T10:00:00Z"


def test_a_rollout_with_no_prompt_and_no_answer_is_an_empty_conversation(tmp_path):
    path = _rollout(tmp_path, [META, _record("event_msg", {"type": "token_count", "info": None})])
    convs, report = parse_file(path)
    assert convs == [] and report.skipped == [(SID, "empty conversation")]
