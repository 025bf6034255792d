"""Claude.ai export parsing against the real sample files and synthetic edge cases."""
from __future__ import annotations

import json

import pytest

from synix_assets.parsers.detect import parse_file
from tests.support import corpus

DATA = corpus.DATA
SIMONW = DATA / "claude" / "simonw-claude-to-sqlite__tests_artifacts.json"
NOW2AI = DATA / "claude" / "now2ai-claude-export-processor__data_conversations__PROCESSED.json"


@pytest.mark.parametrize("path, conversations, messages, skipped", [
    (SIMONW, 1, 20, 0),   # 10 human + 10 assistant, old text-only format
    (NOW2AI, 1, 12, 1),   # conversation 1 has 12 messages; conversation 2 is empty
])
@pytest.mark.corpus
def test_real_claude_files_give_expected_conversation_and_message_counts(path, conversations, messages, skipped):
    convs, report = parse_file(path)
    assert report.format == "claude"
    assert (report.conversations, report.messages, len(report.skipped)) == (conversations, messages, skipped)
    assert sum(c.message_count for c in convs) == messages


@pytest.mark.corpus
def test_out_of_order_simonw_messages_are_sorted_with_human_first_ties():
    [conv] = parse_file(SIMONW)[0]
    stamps = [m.created_at for m in conv.messages]
    assert stamps == sorted(stamps)
    assert [m.role for m in conv.messages] == ["user", "assistant"] * 10
    assert conv.messages[0].text.startswith("Built me an artifact")
    # The array's first element (a later question) lands where it belongs, before its answer.
    later = next(i for i, m in enumerate(conv.messages) if m.text.startswith("Add a onkeyup event"))
    assert conv.messages[later + 1].role == "assistant"
    assert conv.messages[later].created_at == conv.messages[later + 1].created_at


@pytest.mark.corpus
def test_old_format_artifacts_and_thinking_are_handled_and_files_listed():
    [conv] = parse_file(SIMONW)[0]
    text = conv.transcript()
    assert "[artifact: LLM Pricing Calculator]" in text
    assert "<antArtifact" not in text and "<antThinking>" not in text
    assert "[file: CleanShot 20241016 at 20.34.122x.png]" in text
    assert any("thinking" in m.metadata for m in conv.messages)
    assert not conv.messages[1].text.startswith(" ")  # leading space of assistant text stripped


@pytest.mark.corpus
def test_wrapped_now2ai_file_is_read_and_its_empty_conversation_skipped():
    convs, report = parse_file(NOW2AI)
    assert [c.conversation_id for c in convs] == ["a0ac6e43-77dc-434a-8749-49ddc9bad978"]
    assert report.skipped == [("0df82faa-95a9-4c5a-91e5-bb1b690dcbaf", "empty conversation")]
    conv = convs[0]
    assert [m.role for m in conv.messages] == ["user", "assistant"] * 6
    assert [m.created_at for m in conv.messages] == sorted(m.created_at for m in conv.messages)


@pytest.mark.corpus
def test_content_blocks_tool_lines_and_attachment_text():
    [conv] = parse_file(NOW2AI)[0]
    text = conv.transcript()
    assert "[attachment: PDF document.pdf]" in text
    assert "globes.co.il" in conv.messages[0].text  # extracted_content is searchable
    assert "[artifact create:" in text and "[tool result: artifacts]" in text
    assert "isn’t yet supported on mobile" not in text  # content blocks used, not `text`
    tool_lines = [line for line in text.splitlines() if line.startswith("[tool result")]
    assert tool_lines and all(len(line) < 200 for line in tool_lines)


def _msg(uid, sender, text, at, **extra):
    return {"uuid": uid, "sender": sender, "text": text, "created_at": at, "updated_at": at,
            "attachments": [], "files": [], **extra}


def _write(tmp_path, data, name="conversations.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_thinking_blocks_go_to_metadata_not_transcript(tmp_path):
    blocks = [{"type": "thinking", "thinking": "secret reasoning"}, {"type": "text", "text": "Answer."}]
    conv = {"uuid": "c", "name": "t", "created_at": "2025-03-01T10:00:00.5Z", "chat_messages": [
        _msg("h", "human", "Q?", "2025-03-01T10:00:00.5Z"),
        _msg("a", "assistant", "secret reasoningAnswer.", "2025-03-01T10:00:01Z", content=blocks)]}
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert "secret reasoning" not in parsed.transcript()
    assert parsed.messages[1].metadata["thinking"] == ["secret reasoning"]
    assert parsed.messages[1].text == "Answer."


def test_all_empty_texts_or_no_messages_are_skipped_not_errors(tmp_path):
    data = [{"uuid": "none", "name": "", "chat_messages": []},
            {"uuid": "blank", "name": "", "chat_messages": [_msg("h", "human", "", "2025-01-01T00:00:00Z")]},
            {"uuid": "ok", "name": "x", "chat_messages": [_msg("h", "human", "hi", "2025-01-01T00:00:00Z")]}]
    convs, report = parse_file(_write(tmp_path, data))
    assert [c.conversation_id for c in convs] == ["ok"]
    assert report.skipped == [("none", "empty conversation"), ("blank", "empty conversation")]


def test_tree_export_keeps_the_newest_branch(tmp_path):
    root = "00000000-0000-4000-8000-000000000000"
    conv = {"uuid": "tree", "name": "t", "chat_messages": [
        _msg("q", "human", "question", "2025-01-01T00:00:00Z", parent_message_uuid=root),
        _msg("a1", "assistant", "old answer", "2025-01-01T00:00:05Z", parent_message_uuid="q"),
        _msg("a2", "assistant", "regenerated answer", "2025-01-01T00:01:00Z", parent_message_uuid="q")]}
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert [m.text for m in parsed.messages] == ["question", "regenerated answer"]
    assert parsed.metadata["dropped_messages"] == 1


def test_plus_zero_offsets_are_normalised_to_z(tmp_path):
    conv = {"uuid": "tz", "name": "t", "created_at": "2025-02-03T04:05:06.123+00:00",
            "chat_messages": [_msg("h", "human", "hi", "2025-02-03T06:05:06+02:00")]}
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert parsed.created_at == "2025-02-03T04:05:06Z"
    assert parsed.messages[0].created_at == "2025-02-03T04:05:06Z"
