"""One odd value never stops a build (issue 40). In every parser, a date at the edge of the
calendar with an offset (`9999-12-31T23:59:59-14:00` is year 10000 in UTC) is an unknown date:
the conversation builds without it; an integer of more than 4,300 digits (Python will not read
it) is damage: its conversation is skipped with one line naming the field; the other
conversations of the build are untouched either way."""
from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from synix_assets.parsers.detect import parse_file
from synix_resources.store.artifact_store import ArtifactStore

LATE = '"9999-12-31T23:59:59-14:00"'   # past 9999 once moved to UTC
EARLY = '"0001-01-01T00:00:00+14:00"'  # before year 1 once moved to UTC
HUGE = "7" * 5000                      # Python reads at most 4,300 digits
GOOD = '"2024-01-01T00:00:00Z"'
SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"


def _raw(value, when: str) -> str:
    """`value` as JSON with every "@W@" replaced by the raw JSON text `when`."""
    return json.dumps(value).replace('"@W@"', when)


def chatgpt(cid: str, when: str) -> tuple[str, str]:
    node = {"id": "a", "parent": None, "children": [], "message": {
        "id": "a", "author": {"role": "user"}, "create_time": "@W@",
        "content": {"content_type": "text", "parts": ["we planted walnut trees"]}}}
    return f"chatgpt-{cid}.json", _raw([{"id": cid, "title": "Garden", "create_time": "@W@",
                                         "update_time": "@W@", "mapping": {"a": node},
                                         "current_node": "a"}], when)


def claude(cid: str, when: str) -> tuple[str, str]:
    return f"claude-{cid}.json", _raw([{"uuid": cid, "name": "Kettle", "created_at": "@W@",
                                        "updated_at": "@W@", "chat_messages": [
                                            {"uuid": "m1", "sender": "human", "created_at": "@W@",
                                             "text": "the kettle switch is broken"}]}], when)


def claude_code(cid: str, when: str) -> tuple[str, str]:
    line = {"type": "user", "sessionId": cid, "uuid": "u1", "parentUuid": None, "timestamp": "@W@",
            "message": {"role": "user", "content": "how do I rename a branch"}}
    return f"{cid}.jsonl", _raw(line, when) + "\n"


def codex(cid: str, when: str) -> tuple[str, str]:
    uuid = {"good": "019b7f94-51b4-7593-922e-ba12b5b73b52"}.get(cid, "019b7f94-51b4-7593-922e-ba12b5b73b53")
    lines = [{"timestamp": "@W@", "type": "session_meta",
              "payload": {"id": cid, "timestamp": "@W@", "cwd": "/w"}},
             {"timestamp": "@W@", "type": "response_item", "payload": {
                 "type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "fix the build"}]}}]
    return (f"rollout-2026-01-02T18-39-45-{uuid}.jsonl",
            "\n".join(_raw(line, when) for line in lines) + "\n")


def gemini(cid: str, when: str) -> tuple[str, str]:
    return f"session-2025-12-01T21-45-{cid}.json", _raw(
        {"sessionId": cid, "projectHash": "ab" * 32, "startTime": "@W@", "lastUpdated": "@W@",
         "messages": [{"id": "u", "timestamp": "@W@", "type": "user", "content": "hello"},
                      {"id": "g", "timestamp": "@W@", "type": "gemini", "content": "hi"}]}, when)


def openwebui(cid: str, when: str) -> tuple[str, str]:
    tree = {"m1": {"id": "m1", "parentId": None, "childrenIds": [], "role": "user",
                   "content": "plan the trip", "timestamp": "@W@"}}
    chat = {"id": "", "title": "Trip", "history": {"messages": tree, "currentId": "m1"},
            "messages": list(tree.values()), "timestamp": "@W@"}
    return f"openwebui-{cid}.json", _raw([{"id": cid, "user_id": "u1", "title": "Trip", "chat": chat,
                                           "created_at": "@W@", "updated_at": "@W@"}], when)


def copilot(cid: str, when: str) -> tuple[str, str]:
    return f"{cid}.json", _raw({"version": 3, "requesterUsername": "me", "responderUsername": "GitHub Copilot",
                                "sessionId": cid, "creationDate": "@W@", "lastMessageDate": "@W@",
                                "requests": [{"requestId": "r1", "timestamp": "@W@",
                                              "message": {"text": "rename foo"},
                                              "response": [{"value": "Renamed it."}]}]}, when)


def cursor(cid: str, when: str):
    """A Cursor `state.vscdb` with one composer and its one bubble (written by `sqlite3`)."""
    def make(path: Path) -> None:
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        db.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{cid}", _raw(
            {"composerId": cid, "name": "Fix tests", "createdAt": "@W@", "lastUpdatedAt": "@W@",
             "fullConversationHeadersOnly": [{"bubbleId": "b1", "type": 1}]}, when)))
        db.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{cid}:b1", _raw(
            {"type": 1, "text": "why do tests fail?", "createdAt": "@W@"}, when)))
        db.commit()
        db.close()
    return f"{cid}.vscdb", make


def note(cid: str, when: str) -> tuple[str, str]:
    # front matter is YAML: the JSON string's quotes go, so YAML reads a timestamp or an int
    return f"{cid}.md", f"---\ncreated: {when.strip(chr(34))}\n---\nThe walnut trees went in.\n"


PARSERS = {"chatgpt": chatgpt, "claude": claude, "claude-code": claude_code, "codex-cli": codex,
           "gemini-cli": gemini, "openwebui": openwebui, "copilot-chat": copilot, "cursor": cursor,
           "notes": note}
# where each format's skip line finds the giant integer (the first date field of the file)
HUGE_FIELD = {"chatgpt": "field create_time", "claude": "field created_at",
              "claude-code": "line 1 has a 5,000-digit integer in field timestamp",
              "codex-cli": "line 1 has a 5,000-digit integer in field timestamp",
              "gemini-cli": "field startTime", "copilot-chat": "field creationDate",
              "cursor": "field createdAt", "openwebui": "field chat.history.messages.m1.timestamp"}


def _write(folder: Path, fmt: str, cid: str, when: str) -> Path:
    name, content = PARSERS[fmt](cid, when)
    path = folder / name
    if callable(content):
        content(path)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("when", [LATE, EARLY], ids=["9999-offset", "0001-offset"])
@pytest.mark.parametrize("fmt", sorted(PARSERS))
def test_a_date_at_the_edge_of_the_calendar_is_an_unknown_date_and_the_conversation_builds(
        tmp_path, fmt, when):
    convs, report = parse_file(_write(tmp_path, fmt, "odd", when))
    assert report.skipped == [] and len(convs) == 1
    conv = convs[0]
    if fmt == "notes":  # an undated note is dated by its file, as documented for notes
        assert conv.metadata["date_source"] == "file modification time"
        assert conv.created_at[:4] not in ("0001", "9999")
    else:
        assert conv.messages and conv.created_at is None and conv.updated_at is None
        assert [m.created_at for m in conv.messages] == [None] * len(conv.messages)
        assert "Date: unknown" in conv.transcript()
    good, _ = parse_file(_write(tmp_path, fmt, "good", GOOD))
    assert good[0].created_at == "2024-01-01T00:00:00Z"  # the same file with a usable date


@pytest.mark.parametrize("fmt", sorted(set(PARSERS) - {"notes"}))
def test_an_integer_of_5000_digits_as_a_timestamp_skips_that_conversation_naming_the_field(tmp_path, fmt):
    path = _write(tmp_path, fmt, "odd", HUGE)
    # heard on the parsers' logger itself: once the CLI has run in this process it stops propagating
    lines: list[str] = []
    heard = logging.Handler(logging.WARNING)
    heard.emit = lambda record: lines.append(record.getMessage())
    parsers_log = logging.getLogger("synix.parsers")
    level = parsers_log.level
    parsers_log.addHandler(heard)
    parsers_log.setLevel(logging.WARNING)
    try:
        convs, report = parse_file(path)
    finally:
        parsers_log.removeHandler(heard)
        parsers_log.setLevel(level)
    assert convs == [] and len(report.skipped) == 1
    conv_id, cause = report.skipped[0]
    assert "a 5,000-digit integer" in cause and HUGE_FIELD[fmt] in cause, cause
    assert lines == [f"{path}: skipped conversation {conv_id}: {cause}"]


def test_a_5000_digit_integer_in_a_notes_front_matter_keeps_the_note_and_names_the_problem(tmp_path):
    [conv], report = parse_file(_write(tmp_path, "notes", "odd", HUGE))
    assert report.skipped == []
    assert conv.metadata["front_matter_error"] == (
        "front matter has a value YAML cannot read (Exceeds the limit (4300 digits) for integer "
        "string conversion: value has 5000 digits)")
    assert "The walnut trees went in." in conv.transcript()


@pytest.mark.parametrize("where", ["id", "count"])
def test_an_integer_of_5000_digits_as_an_id_or_a_count_skips_only_its_conversation(tmp_path, where):
    good = json.loads(chatgpt("good", GOOD)[1])[0]
    odd = json.loads(chatgpt("odd", GOOD)[1])[0]
    if where == "id":
        odd["id"] = "@HUGE@"
    else:
        odd["mapping"]["a"]["message"]["weight"] = "@HUGE@"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([good, odd, {**good, "id": "good-2"}]).replace('"@HUGE@"', HUGE))
    convs, report = parse_file(path)
    assert [c.conversation_id for c in convs] == ["good", "good-2"]
    field = "field id" if where == "id" else "field mapping.a.message.weight"
    assert report.skipped == [("odd" if where == "count" else "#2",
                               f"has a 5,000-digit integer in {field}")]


def test_a_codex_tool_output_exiting_with_a_5000_digit_code_is_an_error_result_not_a_lost_session(tmp_path):
    name, text = codex("s1", GOOD)
    call = {"timestamp": "2024-01-01T00:00:01Z", "type": "response_item", "payload": {
        "type": "function_call", "name": "shell", "call_id": "c1", "arguments": '{"command": ["make"]}'}}
    out = {"timestamp": "2024-01-01T00:00:02Z", "type": "response_item", "payload": {
        "type": "function_call_output", "call_id": "c1",
        "output": f"Process exited with code {HUGE}\nOutput:\nmake: *** [all] Error 2\n"}}
    path = tmp_path / name
    path.write_text(text + json.dumps(call) + "\n" + json.dumps(out) + "\n")
    [conv], report = parse_file(path)
    assert report.skipped == []
    assert "[tool result (error)] make: *** [all] Error 2" in conv.transcript()


def _transcript_ids(paths) -> list[str]:
    store = ArtifactStore(paths.store)
    try:
        return sorted(a.metadata["meta.chat.conversation_id"] for a in store.list_layer("transcripts"))
    finally:
        store.close()


@pytest.mark.slow
def test_synix_run_builds_every_other_conversation_past_odd_dates_and_giant_integers_and_exits_0(
        small_project):
    """Through the real `synix` CLI: each format's odd-date conversation builds, each giant
    integer costs one skipped line, the build completes (exit 0, as for any skipped conversation)."""
    paths = small_project(1)
    exports = paths.root / "exports"
    for fmt in ("chatgpt", "claude", "claude-code", "gemini-cli", "openwebui"):
        _write(exports, fmt, f"{fmt}-late", LATE)
        _write(exports, fmt, f"{fmt}-huge", HUGE)
    # the first and last instants UTC holds are dates like any other, down to rollups and search
    _write(exports, "claude", "first-instant", '"0001-01-01T00:00:00Z"')
    _write(exports, "claude", "last-instant", '"9999-12-31T23:59:59Z"')
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "NO_COLOR": "1", "COLUMNS": "300"}
    env.pop("SYNIX_DEBUG", None)
    proc = subprocess.run([SYNIX, "-p", str(paths.root), "run"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    skipped = sorted(line for line in proc.stderr.splitlines() if line.startswith("skipped conversation"))
    assert len(skipped) == 5 and all("5,000-digit integer" in line for line in skipped), proc.stderr
    assert _transcript_ids(paths) == sorted(["conv-0", "chatgpt-late", "claude-late", "claude-code-late",
                                             "gemini-cli-late", "openwebui-late", "first-instant",
                                             "last-instant"])
    store = ArtifactStore(paths.store)
    try:
        periods = {a.metadata.get("meta.time.period") for a in store.list_layer("monthly")}
    finally:
        store.close()
    assert {"0001-01", "9999-12", "undated"} <= periods, periods
