"""Gemini CLI checkpoints, the first Codex CLI's single-JSON rollouts, Cursor's SQLite store and
Copilot Chat's session log: detected with format="auto", nameable, and each damaged conversation
is one report line, never the whole file. Fixtures are built in tmp (a real state.vscdb)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from synix_assets.parsers.detect import detect_format, iter_conversations, parse_file
from synix_assets.parsers.model import ParseReport
from synix_assets.sources.reader import export_files, iter_export_files
from synix_resources.errors import ExportFormatError

CHECKPOINT = [
    {"role": "user", "parts": [{"text": "List the files"}]},
    {"role": "model", "parts": [{"text": "plan the listing", "thought": True}, {"text": "Let me look."},
                                {"functionCall": {"name": "list_directory", "args": {"path": "."}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "list_directory", "response": {"output": "a.py b.py"}}}]},
    {"role": "model", "parts": [{"text": "Two files."}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]},
]


def _write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


def test_gemini_checkpoint_list_and_history_wrapper_keep_tools_as_lines_and_thoughts_in_metadata(tmp_path):
    bare = _write(tmp_path / "proj1" / "checkpoint-my%20tag.json", CHECKPOINT)
    wrapped = _write(tmp_path / "proj2" / "checkpoint-my%20tag.json", {"history": CHECKPOINT, "authType": "oauth-personal"})
    for path in (bare, wrapped):
        assert detect_format(path) == "gemini-cli"
        [conv], report = parse_file(path)
        assert conv.conversation_id == f"{path.parent.name}/checkpoint-my%20tag"
        assert conv.metadata["checkpoint_tag"] == "my tag"
        assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
        assert conv.messages[1].text == 'Let me look.\n[tool use: list_directory] {"path": "."}'
        assert conv.messages[1].metadata["thinking"] == ["plan the listing"]
        assert "plan the listing" not in conv.transcript()
        assert conv.messages[2].text == "[tool result] a.py b.py"
        assert conv.messages[3].text == "Two files.\n[attachment: image/png]"
        assert conv.created_at and conv.metadata["date_source"] == "file modification time"
    assert parse_file(wrapped)[0][0].metadata["auth_type"] == "oauth-personal"
    assert parse_file(bare, "gemini-cli")[1].conversations == 1
    with pytest.raises(ExportFormatError, match="looks like a gemini-cli export, not codex-cli"):
        parse_file(bare, "codex-cli")


def test_an_open_webui_chat_whose_history_is_an_object_is_still_open_webui(tmp_path):
    chat = {"id": "c1", "title": "t", "history": {"currentId": "m2", "messages": {
        "m1": {"id": "m1", "parentId": None, "role": "user", "content": "hi", "timestamp": 1744577557},
        "m2": {"id": "m2", "parentId": "m1", "role": "assistant", "content": "hello", "timestamp": 1744577558}}}}
    assert detect_format(_write(tmp_path / "chat.json", chat)) == "openwebui"


@pytest.mark.parametrize("body, why", [
    (b'[{"role": "user", "parts": [{"text": "hi"}]},' + b"[" * 200 + b"]" * 200 + b"]", "nested more than 100 levels"),
    (b'[{"role": "user", "parts": [{"text": "\\udcff"}]}]', "lone surrogate"),
    (b'[{"role": "system", "parts": []}]', "empty conversation"),
])
def test_a_damaged_gemini_checkpoint_is_one_skipped_line(tmp_path, body, why):
    path = _write(tmp_path / "h" / "checkpoint-x.json", body)
    conversations, report = parse_file(path)
    assert conversations == [] and len(report.skipped) == 1
    assert report.skipped[0][0] == "h/checkpoint-x" and why in report.skipped[0][1]


def test_a_cut_off_or_badly_encoded_checkpoint_is_one_line_naming_the_file(tmp_path):
    cut = _write(tmp_path / "h" / "checkpoint-cut.json", json.dumps(CHECKPOINT).encode()[:-30])
    latin = _write(tmp_path / "h" / "checkpoint-latin.json", '[{"role": "user", "parts": [{"text": "café"}]}]'.encode("latin-1"))
    with pytest.raises(ExportFormatError, match="checkpoint-cut.json: is truncated"):
        parse_file(cut)
    with pytest.raises(ExportFormatError, match="checkpoint-latin.json: is not valid UTF-8"):
        parse_file(latin)


def test_a_single_json_codex_rollout_reads_its_items_from_the_session_start(tmp_path):
    rollout = {"session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "0a1b2c3d-1111-2222-3333-444455556666",
                           "instructions": ""},
               "items": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
                         {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Looking at code"}]},
                         {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"ls\"]}", "call_id": "c1"},
                         {"type": "function_call_output", "call_id": "c1", "output": "{\"output\": \"a.py\", \"metadata\": {\"exit_code\": 0}}"},
                         {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]},
                         "not an item"]}
    path = _write(tmp_path / "rollout-2025-04-20-0a1b2c3d-1111-2222-3333-444455556666.json", rollout)
    assert detect_format(path) == "codex-cli"
    [conv], _report = parse_file(path, "codex-cli")
    assert conv.conversation_id == "0a1b2c3d-1111-2222-3333-444455556666"
    assert conv.created_at == "2025-04-20T10:00:00Z" and conv.title == "fix the bug"
    assert [m.text for m in conv.messages] == ["fix the bug", '[tool use: shell] {"command": ["ls"]}',
                                               "[tool result] a.py", "Fixed."]
    assert conv.messages[1].metadata["reasoning"] == ["Looking at code"]
    assert conv.metadata["not_in_transcript"] == {"malformed item": 1}
    no_items = _write(tmp_path / "rollout-2025-04-21-x.json", {"session": {"id": "s2"}, "items": {"a": 1}})
    assert parse_file(no_items)[1].skipped == [("rollout-2025-04-21-x", "the rollout has no items list")]


def _cursor_db(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    put = lambda table, key, value: db.execute(  # noqa: E731
        f"INSERT INTO {table} VALUES (?, ?)", (key, value if isinstance(value, bytes) else json.dumps(value)))
    put("cursorDiskKV", "composerData:c1", {
        "_v": 10, "composerId": "c1", "name": "Fix tests", "createdAt": 1766691308486, "lastUpdatedAt": 1766692125731,
        "modelConfig": {"modelName": "claude-4.5-sonnet"},
        "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2},
                                        {"bubbleId": "b2", "type": 2}, {"bubbleId": "gone", "type": 2}]})
    put("cursorDiskKV", "bubbleId:c1:b1", {"_v": 3, "type": 1, "text": "why do tests fail?", "createdAt": "2025-12-25T19:35:08.486Z"})
    put("cursorDiskKV", "bubbleId:c1:b2", {"_v": 3, "type": 2, "text": "Running them.", "thinking": {"text": "check pytest"},
                                           "toolFormerData": {"name": "run_terminal_cmd", "rawArgs": "{\"command\": \"pytest\"}",
                                                              "result": "1 failed", "status": "completed"},
                                           "codeBlocks": [{"content": "x"}]})
    put("cursorDiskKV", "composerData:c2", b'{"composerId": "c2", "conversation": [{"type": 1, "text": "caf\xe9"}]}')
    put("cursorDiskKV", "composerData:c3", {"composerId": "c3", "conversation": [
        {"type": 1, "bubbleId": "x", "text": "inline question"}, {"type": 2, "bubbleId": "y", "text": "inline answer"}]})
    put("cursorDiskKV", "composerData:c4", b"[" * 300 + b"]" * 300)
    put("cursorDiskKV", "composerData:c5", b"{not json")
    put("cursorDiskKV", "composerData:c6", {"composerId": "c6", "fullConversationHeadersOnly": []})
    put("cursorDiskKV", "checkpointId:c1:zz", {"unrelated": True})
    put("ItemTable", "workbench.panel.aichat.view.aichat.chatdata", {"tabs": [
        {"tabId": "t1", "chatTitle": "old chat\nsecond line", "lastSendTime": 1700000000000,
         "bubbles": [{"type": "user", "text": "hello?"}, {"type": "ai", "text": "hi"}]},
        {"tabId": "t1", "bubbles": [{"type": "user", "text": "same tab id again"}]}]})
    db.commit()
    db.close()
    return path


def test_cursor_state_vscdb_is_read_read_only_composers_bubbles_inline_and_old_tabs(tmp_path):
    path = _cursor_db(tmp_path / "state.vscdb")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert detect_format(path) == "cursor"
    conversations, report = parse_file(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.vscdb"]  # no journal or WAL left
    by_id = {c.conversation_id: c for c in conversations}
    assert [c.conversation_id for c in conversations] == ["c1", "c3", "t1", "t1"]  # same tab id: both, the merge picks
    c1 = by_id["c1"]
    assert (c1.title, c1.created_at, c1.updated_at) == ("Fix tests", "2025-12-25T19:35:08Z", "2025-12-25T19:48:45Z")
    assert [(m.message_id, m.role, m.text) for m in c1.messages] == [
        ("b1", "user", "why do tests fail?"),
        ("b2", "assistant", 'Running them.\n[tool use: run_terminal_cmd] {"command": "pytest"}'),
        ("b2:result", "tool", "[tool result] 1 failed")]
    assert c1.messages[1].metadata["thinking"] == ["check pytest"]
    assert c1.metadata["model"] == "claude-4.5-sonnet"
    assert c1.metadata["not_in_transcript"] == {"code blocks (shown in the text)": 1, "missing bubble": 1,
                                                "repeated bubble id": 1}
    assert [m.text for m in by_id["c3"].messages] == ["inline question", "inline answer"]
    assert conversations[2].title == "old chat" and conversations[2].updated_at == "2023-11-14T22:13:20Z"
    skipped = dict(report.skipped)
    assert "not valid UTF-8" in skipped["c2"]
    assert "nested more than 100 levels" in skipped["c4"]
    assert "not valid JSON" in skipped["c5"]
    assert skipped["c6"] == "empty conversation"
    assert len(report.skipped) == 4 and report.conversations == 4
    assert parse_file(path, "cursor")[1].conversations == 4
    with pytest.raises(ExportFormatError, match="is a Cursor database \\(state.vscdb\\), not notes"):
        parse_file(path, "notes")


@pytest.mark.parametrize("make, says", [
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50), "not a readable SQLite database"),
    (lambda p: p.write_bytes(b"just some text"), "not a readable SQLite database"),
    (lambda p: sqlite3.connect(p).execute("CREATE TABLE other (a)").connection.commit(), "without Cursor's cursorDiskKV"),
])
def test_a_vscdb_that_is_not_a_readable_cursor_store_is_one_line_naming_the_file(tmp_path, make, says):
    path = tmp_path / "state.vscdb"
    make(path)
    with pytest.raises(ExportFormatError, match=says) as caught:
        parse_file(path)
    assert str(path) in caught.value.one_line() and "\n" not in caught.value.one_line()


def test_a_cut_off_cursor_database_is_one_failed_file_not_a_crash(tmp_path):
    whole = _cursor_db(tmp_path / "whole.vscdb").read_bytes()
    cut = tmp_path / "state.vscdb"
    cut.write_bytes(whole[: len(whole) // 2])
    try:
        conversations, report = parse_file(cut)
    except ExportFormatError as exc:
        assert str(cut) in exc.one_line()
    else:  # SQLite read what the cut left: every conversation it could not read is one line
        assert report.conversations + len(report.skipped) >= 1


def _log_line(value) -> str:
    return json.dumps(value) + "\n"


def _request(n: int, text: str) -> dict:
    return {"requestId": f"request_{n}", "timestamp": 1760000000000 + n * 1000, "modelId": "copilot/gpt-4.1",
            "message": {"text": text, "parts": []}, "response": []}


def test_a_copilot_session_log_is_replayed_to_the_final_session(tmp_path):
    lines = [{"kind": 0, "v": {"version": 3, "sessionId": "4f2a", "creationDate": 1760000000000,
                               "requests": [_request(1, "first question")]}},
             {"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "First answer."}]},
             {"kind": 1, "k": ["customTitle"], "v": "Log title"},
             {"kind": 2, "k": ["requests"], "v": [_request(2, "draft"), _request(3, "x")]},
             {"kind": 2, "k": ["requests"], "v": [_request(2, "second question")], "i": 1},
             {"kind": 2, "k": ["requests", 1, "response"], "v": [{"value": "Second "}, {"value": "answer."}]},
             {"kind": 3, "k": ["requests", 1, "modelId"]}]
    path = tmp_path / "chatSessions" / "4f2a.jsonl"
    path.parent.mkdir()
    path.write_text("".join(_log_line(v) for v in lines))
    assert detect_format(path) == "copilot-chat"
    [conv], report = parse_file(path, "copilot-chat")
    assert (conv.conversation_id, conv.title) == ("4f2a", "Log title")
    assert [(m.role, m.text) for m in conv.messages] == [
        ("user", "first question"), ("assistant", "First answer."),
        ("user", "second question"), ("assistant", "Second answer.")]


@pytest.mark.parametrize("change, why", [
    ({"kind": 1, "k": ["requests", 5, "x"], "v": 1}, "line 2: the change's path .requests[5] does not exist"),
    ({"kind": 2, "k": ["customTitle"], "v": [1]}, "line 2: the change appends to .customTitle, which is not a list"),
    ({"kind": 9, "k": ["a"]}, "line 2: unknown change kind 9"),
    ({"kind": 1, "k": ["a"] * 500, "v": 1}, "line 2: the change has no usable path (k)"),
])
def test_a_copilot_log_change_that_does_not_apply_skips_that_session_in_one_line(tmp_path, change, why):
    path = tmp_path / "s.jsonl"
    path.write_text(_log_line({"kind": 0, "v": {"sessionId": "s", "customTitle": "t",
                                                "requests": [_request(1, "q")]}}) + _log_line(change))
    conversations, report = parse_file(path)
    assert conversations == [] and report.skipped == [("s", why)]


def test_a_copilot_log_cut_off_mid_line_is_read_again_once_complete(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(_log_line({"kind": 0, "v": {"sessionId": "s", "requests": [_request(1, "q")]}}) + '{"kind": 2, "k": ["requ')
    with pytest.raises(ExportFormatError, match="s.jsonl: "):
        parse_file(path)


def test_a_mixed_folder_holds_every_new_shape_and_is_walked_in_path_order_as_it_streams(tmp_path):
    _write(tmp_path / "gemini" / "h1" / "checkpoint-a.json", CHECKPOINT)
    _write(tmp_path / "codex" / "rollout-2025-04-20-0a1b2c3d-1111-2222-3333-444455556666.json",
           {"session": {"id": "s"}, "items": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]})
    (tmp_path / "cursor").mkdir()
    _cursor_db(tmp_path / "cursor" / "state.vscdb")
    (tmp_path / "copilot").mkdir()
    (tmp_path / "copilot" / "s.jsonl").write_text(_log_line({"kind": 0, "v": {"sessionId": "s", "requests": [_request(1, "q")]}}))
    for name in ("a-b/x.md", "a/b.md", "a.md", "a/b/c.md", "B.md"):
        _write(tmp_path / "notes" / name, b"a note\n")
    walked = iter_export_files(tmp_path)
    assert not isinstance(walked, list)  # a generator: the walk holds one folder's listing per level
    files = list(walked)
    assert files == sorted(files) == export_files(tmp_path)
    formats = {}
    for file in files:
        report = ParseReport(path=str(file), format="auto")
        list(iter_conversations(file, report=report, root=tmp_path))
        formats[file.relative_to(tmp_path).parts[0]] = report.format
    assert formats == {"codex": "codex-cli", "copilot": "copilot-chat", "cursor": "cursor",
                       "gemini": "gemini-cli", "notes": "notes"}


def test_forget_never_takes_a_cursor_database_for_a_live_inbox_nor_edits_it(tmp_path):
    from synix_assets.forget import files

    (tmp_path / "exports").mkdir()
    path = _cursor_db(tmp_path / "exports" / "state.vscdb")
    before = path.read_bytes()
    some = files.plan_file(tmp_path, path, False, {"c1"})
    assert (some.action, some.points_to) == (files.OUTSIDE, str(path.resolve()))
    files.apply(tmp_path, some, {"c1"})
    assert path.read_bytes() == before
    assert files.plan_file(tmp_path, path, True, {"c1", "c3", "t1"}).action == files.DELETE
