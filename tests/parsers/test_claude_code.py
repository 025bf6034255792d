"""Claude Code session JSONL parsing."""
from __future__ import annotations

import json

import pytest

from synix_assets.parsers.detect import detect_format, parse_file
from tests.support import corpus

DATA = corpus.DATA
SAMPLE = DATA / "claude-code" / "polylogue__claude-normalization-main__SYNTHETIC.jsonl"


@pytest.mark.corpus
def test_sample_gives_two_sessions_with_expected_message_counts():
    convs, report = parse_file(SAMPLE)
    assert detect_format(SAMPLE) == "claude-code"
    assert {c.conversation_id: c.message_count for c in convs} == {
        # u1, a1, bg-start (tool result), /status command, a2, fg-result (tool result)
        "claude-normalization-main": 6,
        # the stray line from another session becomes its own conversation
        "claude-normalization-other": 2,
    }
    assert (report.conversations, report.messages, report.skipped) == (2, 8, [])


@pytest.mark.corpus
def test_duplicate_uuid_keeps_first_and_meta_sidechain_queue_lines_are_ignored():
    main = next(c for c in parse_file(SAMPLE)[0] if c.conversation_id == "claude-normalization-main")
    text = main.transcript()
    assert main.messages[0].text == "Review the parser."
    assert "Conflicting duplicate" not in text
    assert "environment_context" not in text          # isMeta
    assert "Normalization complete." not in text      # isSidechain
    assert "task-notification" not in text            # queue-operation
    assert "Request interrupted" not in text          # no uuid, cannot be linked
    assert main.metadata["duplicate_uuids"] == 1


@pytest.mark.corpus
def test_parent_chain_is_followed_through_meta_lines_and_blocks_rendered():
    main = next(c for c in parse_file(SAMPLE)[0] if c.conversation_id == "claude-normalization-main")
    assert [m.role for m in main.messages] == ["user", "assistant", "tool", "user", "assistant", "tool"]
    assert main.messages[3].text == "[command] /status"
    assert "[tool use: Bash]" in main.messages[1].text
    assert "thinking" in main.messages[1].metadata and "inspect the production" not in main.transcript()
    assert main.messages[-1].text == "[tool result (error)] command failed"


def test_rewound_branch_is_dropped(tmp_path):
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "timestamp": "2025-01-01T00:00:00Z",
         "message": {"role": "user", "content": "first"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "abandoned"}]}},
        {"type": "user", "uuid": "u2", "parentUuid": None, "sessionId": "s", "timestamp": "2025-01-01T00:01:00Z",
         "logicalParentUuid": None, "message": {"role": "user", "content": "edited first"}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "u2", "sessionId": "s", "timestamp": "2025-01-01T00:01:01Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "kept"}]}},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    [conv] = parse_file(path)[0]
    assert [m.text for m in conv.messages] == ["edited first", "kept"]
    assert conv.metadata["dropped_messages"] == 2
