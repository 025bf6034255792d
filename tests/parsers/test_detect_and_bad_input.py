"""Format detection, bad-input errors (one line naming the file and the fix), and demo exports."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from synix_assets.parsers.detect import detect_format, iter_conversations, parse_file
from synix_assets.parsers.model import ParseReport
from synix_resources.errors import ExportFormatError
from tests.support import corpus

REPO = Path(__file__).resolve().parents[2]
DATA = corpus.DATA
DEMO = REPO / "synix_assets" / "demo"


def _conv(conv_id: str, text: str = "hello") -> dict:
    mapping = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["u"]},
        "u": {"id": "u", "parent": "root", "children": [], "message": {
            "id": "u", "author": {"role": "user"}, "create_time": 1700000000.0,
            "content": {"content_type": "text", "parts": [text]}}},
    }
    return {"id": conv_id, "title": conv_id, "create_time": 1700000000.0, "mapping": mapping,
            "current_node": "u"}


@pytest.mark.parametrize("path, expected", [
    (DATA / "chatgpt" / "librechat__chatgpt-tree.json", "chatgpt"),
    (DATA / "chatgpt" / "pkuppens-my_chat_gpt__history_download_conversations.json", "chatgpt"),
    (DATA / "claude" / "simonw-claude-to-sqlite__tests_artifacts.json", "claude"),
    (DATA / "claude" / "now2ai-claude-export-processor__data_conversations__PROCESSED.json", "claude"),
    (DATA / "claude-code" / "polylogue__claude-normalization-main__SYNTHETIC.jsonl", "claude-code"),
])
@pytest.mark.corpus
def test_detect_format_recognises_each_real_file(path, expected):
    assert detect_format(path) == expected


def test_zip_export_is_detected_by_its_member(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", json.dumps([_conv("a")]))
    assert detect_format(archive) == "chatgpt"


def _assert_one_line_error(path: Path, *needles: str) -> str:
    with pytest.raises(ExportFormatError) as info:
        parse_file(path)
    message = info.value.one_line()
    assert "\n" not in str(info.value)
    assert str(path) in message
    for needle in needles:
        assert needle in message
    return message


def test_zero_byte_file_is_rejected(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(b"")
    _assert_one_line_error(path, "empty (0 bytes)", "export it again")


def test_non_json_file_is_rejected(tmp_path):
    path = tmp_path / "chat.html"
    path.write_text("<html><body>not an export</body></html>")
    _assert_one_line_error(path, "is not JSON", "conversations.json")


def test_truncated_json_is_rejected_before_anything_is_yielded(tmp_path):
    good = json.dumps([_conv("a"), _conv("b"), _conv("c")])
    path = tmp_path / "conversations.json"
    path.write_text(good[: len(good) - 40])
    with pytest.raises(ExportFormatError, match="truncated"):
        next(iter_conversations(path))
    _assert_one_line_error(path, "truncated")


def test_damage_mid_file_raises_mid_stream_and_parse_file_returns_nothing(tmp_path):
    # Ends in "]" so the up-front tail check passes; the damage is only found when reached.
    text = json.dumps([_conv("a"), _conv("b")])[:-1] + ", {\"id\": \"c\", ]"
    path = tmp_path / "conversations.json"
    path.write_text(text)
    got = []
    with pytest.raises(ExportFormatError, match="not valid JSON"):
        for conv in iter_conversations(path):
            got.append(conv.conversation_id)
    assert got == ["a", "b"]  # why callers must discard a failed file's partial output
    _assert_one_line_error(path, "not valid JSON")


def test_unknown_json_format_is_rejected(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([{"sample_id": "x", "qa": []}]))
    _assert_one_line_error(path, "unknown export format")


@pytest.mark.corpus
def test_real_locomo_file_is_an_unknown_export_format():
    _assert_one_line_error(DATA / "locomo" / "locomo10-dev-conv0-4.json", "unknown export format")


def test_zip_without_conversations_json_is_rejected(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("user.json", "{}")
        zf.writestr("chat.html", "<html/>")
    _assert_one_line_error(archive, "no conversations.json", "user.json")


def test_binary_file_is_rejected(tmp_path):
    path = tmp_path / "photo.json"
    path.write_bytes(bytes(range(256)) * 10)
    _assert_one_line_error(path, "binary file")


def test_invalid_utf8_is_rejected(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(json.dumps([_conv("a", "caf")]).encode().replace(b"caf", b"caf\xe9"))
    _assert_one_line_error(path, "not valid UTF-8", "UTF-8")


def test_invalid_utf8_deep_in_a_big_file_is_rejected(tmp_path):
    convs = [_conv(f"c{i}", "x" * 1000) for i in range(200)]
    raw = json.dumps(convs).encode()
    cut = raw.rindex(b"xxxx")
    path = tmp_path / "conversations.json"
    path.write_bytes(raw[:cut] + b"\xff" + raw[cut + 1:])
    _assert_one_line_error(path, "not valid UTF-8")


@pytest.mark.corpus
def test_truncated_jsonl_is_rejected(tmp_path):
    src = (DATA / "claude-code" / "polylogue__claude-normalization-main__SYNTHETIC.jsonl").read_bytes()
    path = tmp_path / "session.jsonl"
    path.write_bytes(src[:-60])
    _assert_one_line_error(path, "truncated")


def test_missing_file_and_folder_are_rejected(tmp_path):
    _assert_one_line_error(tmp_path / "nope.json", "not found")
    _assert_one_line_error(tmp_path, "folder")


def test_utf8_bom_and_empty_list_are_accepted(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([_conv("a")]).encode())
    assert [c.conversation_id for c in parse_file(path)[0]] == ["a"]
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    convs, report = parse_file(empty)
    assert convs == [] and report.conversations == 0
    with pytest.raises(ExportFormatError, match="no conversations"):
        detect_format(empty)


def test_explicit_format_that_contradicts_the_file_is_rejected(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([_conv("a")]))
    with pytest.raises(ExportFormatError, match="looks like a chatgpt export"):
        parse_file(path, format="claude")


def test_non_object_entry_is_skipped_and_recorded(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([_conv("a"), 42, _conv("b")]))
    report = ParseReport(path=str(path), format="auto")
    convs = list(iter_conversations(path, report=report))
    assert [c.conversation_id for c in convs] == ["a", "b"]
    assert report.skipped == [("#2", "entry is a int, not an object")]


# --- demo exports -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, fmt, conversations", [
    ("chatgpt_demo.json", "chatgpt", 14),
    ("claude_demo.json", "claude", 10),
])
def test_demo_exports_parse_with_expected_counts_and_span_five_months(name, fmt, conversations):
    path = DEMO / name
    convs, report = parse_file(path)
    assert report.format == fmt and report.skipped == []
    assert len(convs) == conversations
    assert all(4 <= c.message_count <= 10 for c in convs)
    months = {c.created_at[:7] for c in convs}
    assert len(months) >= 5 and min(months) >= "2025-01" and max(months) <= "2025-06"


def test_demo_exports_are_small_and_include_a_regenerated_branch():
    assert sum((DEMO / n).stat().st_size for n in ("chatgpt_demo.json", "claude_demo.json")) < 150_000
    convs, _ = parse_file(DEMO / "chatgpt_demo.json")
    assert sum(c.metadata["dropped_branches"] for c in convs) >= 1


def test_truncated_zip_is_rejected(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps([_conv(f"c{i}", "x" * 500) for i in range(50)]))
    raw = archive.read_bytes()
    archive.write_bytes(raw[: len(raw) // 2])
    _assert_one_line_error(archive, "zip is corrupt or truncated")


def test_timestamps_accept_epoch_seconds_milliseconds_and_iso_forms():
    from synix_resources.values import utc_iso
    assert utc_iso(1714585031.148505) == "2024-05-01T17:37:11Z"
    assert utc_iso(1714585031148) == "2024-05-01T17:37:11Z"
    assert utc_iso("2025-07-06T03:10:13.076141Z") == "2025-07-06T03:10:13Z"
    assert utc_iso("2025-07-06T05:10:13+02:00") == "2025-07-06T03:10:13Z"
    assert utc_iso(None) is None and utc_iso("yesterday") is None and utc_iso(float("nan")) is None
