"""Claude Code 2.0.64 → 2.1.7 transcripts (real files of ../shared/data/claude-code): records the
older parser ignored (system/progress links, one API response over several lines, parallel tool
results, sub-agent files, summaries of other sessions) no longer lose messages or whole sessions."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from synix_assets.parsers.detect import parse_file
from tests.support import corpus

DATA = corpus.DATA / "claude-code"
PRIVATE = DATA / "codemie-ai-codemie-code__tests_integration_session_fixtures_claude_-tmp-private_4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
SESSION = DATA / "codemie-ai-codemie-code__tests_integration_session_fixtures_session-9eda1058.jsonl"
SUBAGENT = DATA / "codemie-ai-codemie-code__tests_integration_session_fixtures_claude_incremental-subagents_turn-2_subagents_agent-a485154.jsonl"


def _tools(text: str) -> Counter:
    return Counter(re.findall(r"\[tool use: (\w+)\]", text))


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.corpus
def test_one_api_response_over_several_lines_is_one_assistant_message():
    [conv], report = parse_file(PRIVATE)
    roles = Counter(m.role for m in conv.messages)
    # 10 assistant lines carry 7 distinct message.ids; 3 prompts; 6 tool-result lines
    assert roles == {"assistant": 7, "user": 3, "tool": 6} and report.skipped == []
    assert _tools(conv.transcript()) == {"Write": 3, "Read": 1, "Edit": 1, "Bash": 1}
    assert conv.metadata["version"] == "2.0.64" and conv.metadata["cwd"] == "/tmp/private"
    assert conv.metadata["dropped_messages"] == 0


@pytest.mark.corpus
def test_replies_parented_on_system_lines_keep_the_whole_session_and_other_sessions_summaries_are_not_its_title():
    [conv], report = parse_file(SESSION)
    assert report.skipped == []  # the 16 summary lines no longer make an "unknown-session"
    lines = _lines(SESSION)
    prompts = [l["message"]["content"] for l in lines if l["type"] == "user" and isinstance(l["message"]["content"], str)]
    users = [m.text for m in conv.messages if m.role == "user"]
    assert [p for p in prompts if p in users] == prompts and len(prompts) == 3
    assert conv.metadata["dropped_messages"] == 0
    summaries = {l["summary"] for l in lines if l["type"] == "summary"}
    assert conv.title not in summaries and conv.title == users[0]
    assert conv.metadata["other_sessions_summaries"] == 16
    # every assistant API response is there once, with its thinking kept out of the text
    responses = {l["message"]["id"] for l in lines if l["type"] == "assistant"}
    assert sum(1 for m in conv.messages if m.role == "assistant") == len(responses)
    thinking = [t for m in conv.messages for t in m.metadata.get("thinking", [])]
    assert len(thinking) == 4 and not any(t[:40] in conv.transcript() for t in thinking)
    assert _tools(conv.transcript()) == {"Task": 2, "Write": 1}


@pytest.mark.corpus
def test_a_subagent_transcript_is_its_own_conversation_with_every_parallel_tool_result():
    [conv], report = parse_file(SUBAGENT)
    parent = "e9fb405b-169f-40eb-9396-7e75076f045d"
    assert conv.conversation_id == f"{parent}.agent-a485154" and report.skipped == []
    assert conv.metadata["parent_session"] == parent and conv.metadata["agent_id"] == "a485154"
    text = conv.transcript()
    assert _tools(text) == {"Read": 11, "Glob": 3, "Grep": 3, "Bash": 3}
    assert text.count("[tool result") == 20 and text.count("[tool result (error)]") == 1
    assert conv.messages[0].role == "user" and conv.messages[0].text.startswith("Analyze the existing CLI")
    assert conv.metadata["dropped_messages"] == 0


def test_a_rewound_branch_is_still_dropped_when_tool_calls_run_in_parallel(tmp_path):
    def line(uid, parent, kind, content, api=None):
        message = {"role": "assistant" if kind == "assistant" else "user", "content": content}
        if api:
            message["id"] = api
        return {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": "s",
                "timestamp": "2025-01-01T00:00:00Z", "message": message}
    use = lambda i: {"type": "tool_use", "id": i, "name": "Read", "input": {"p": i}}  # noqa: E731
    result = lambda i: {"type": "tool_result", "tool_use_id": i, "content": f"out {i}"}  # noqa: E731
    lines = [
        line("u1", None, "user", "read two files"),
        line("a1", "u1", "assistant", [use("t1")], "m1"), line("a2", "a1", "assistant", [use("t2")], "m1"),
        line("r1", "a1", "user", [result("t1")]), line("r2", "a2", "user", [result("t2")]),
        line("x1", "r2", "assistant", [{"type": "text", "text": "abandoned"}], "m2"),
        {"type": "system", "uuid": "sys", "parentUuid": "r2", "sessionId": "s", "subtype": "turn_duration"},
        line("u2", "sys", "user", "now summarise"),
        line("a3", "u2", "assistant", [{"type": "text", "text": "summary"}], "m3"),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    [conv], _ = parse_file(path)
    assert [m.text for m in conv.messages] == [
        "read two files", '[tool use: Read] {"p": "t1"}\n[tool use: Read] {"p": "t2"}',
        "[tool result] out t1", "[tool result] out t2", "now summarise", "summary"]
    assert conv.metadata["dropped_messages"] == 1  # "abandoned"
