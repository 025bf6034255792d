"""Newer ChatGPT/Claude content shapes, Open WebUI/Copilot/SpecStory/notes variants, hostile input
(one line per bad conversation, never the file), and a mixed folder read as one source."""
from __future__ import annotations

import json

import pytest

from synix_assets.parsers.detect import detect_format, iter_conversations, parse_file
from synix_assets.parsers.model import ParseReport
from synix_assets.sources.reader import export_files
from synix_resources.errors import ExportFormatError


def _node(nid, parent, children, role, content, **extra):
    message = {"id": nid, "author": {"role": role, **extra.pop("author", {})}, "create_time": 1760000000.0,
               "content": content, **extra}
    return {"id": nid, "parent": parent, "children": children, "message": message}


def _reasoning_conversation():
    mapping = {
        "client-created-root": {"id": "client-created-root", "parent": None, "children": ["u"], "message": None},
        "u": _node("u", "client-created-root", ["t"], "user", {
            "content_type": "multimodal_text", "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": "sediment://file_1",
                 "metadata": {"dalle": None}}, "what is in this photo?"]},
            metadata={"attachments": [{"id": "file_1", "name": "cat.png"}]}),
        "t": _node("t", "u", ["r"], "assistant", {
            "content_type": "thoughts", "thoughts": [
                {"summary": "Looking at the photo", "content": "A grey cat on a sofa.", "chunks": [], "finished": True}],
            "source_analysis_msg_id": "x"}),
        "r": _node("r", "t", ["c"], "assistant", {"content_type": "reasoning_recap", "content": "Thought for 7s"}),
        "c": _node("c", "r", ["a"], "assistant", {"content_type": "code", "language": "json", "text": json.dumps(
            {"name": "cat_story", "type": "document", "content": "Once upon a time a grey cat..."})},
            recipient="canmore.create_textdoc"),
        "a": _node("a", "c", [], "assistant", {"content_type": "text", "parts": ["It is a grey cat."]},
                   channel="final", metadata={"canvas": {"textdoc_id": "d1", "title": "cat_story", "version": 1}}),
    }
    return {"id": "gpt5", "title": "Cat", "create_time": 1760000000.0, "mapping": mapping, "current_node": "a"}


def test_chatgpt_thoughts_and_recap_go_to_the_answer_metadata_canvas_and_images_stay_readable(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([_reasoning_conversation()]))
    [conv], report = parse_file(path)
    texts = [m.text for m in conv.messages]
    assert texts[0] == "[image]\nwhat is in this photo?\n[attachment: cat.png]"
    assert texts[1].startswith("[canvas create: cat_story (document)]\n")
    assert "Once upon a time a grey cat" in texts[1]
    assert "Thought for" not in conv.transcript() and "grey cat on a sofa" not in conv.transcript()
    assert conv.messages[1].metadata["thinking"] == ["Looking at the photo: A grey cat on a sofa.", "[Thought for 7s]"]
    assert conv.messages[2].metadata["canvas"]["textdoc_id"] == "d1"


def test_claude_content_blocks_keep_tool_use_results_and_thinking_out_of_the_text(tmp_path):
    conv = {"uuid": "c1", "name": "Search", "created_at": "2025-09-01T10:00:00Z", "chat_messages": [
        {"uuid": "h", "sender": "human", "created_at": "2025-09-01T10:00:00Z",
         "content": [{"type": "text", "text": "find the release date"}]},
        {"uuid": "a", "sender": "assistant", "created_at": "2025-09-01T10:00:05Z", "content": [
            {"type": "thinking", "thinking": "", "summaries": [{"summary": "Planning a search"}]},
            {"type": "tool_use", "name": "web_search", "input": {"query": "release date"},
             "integration_name": "Web"},
            {"type": "tool_result", "name": "web_search", "is_error": False, "content": [
                {"type": "knowledge", "title": "Release notes", "url": "https://example.org/r", "text": "May 5"}]},
            {"type": "text", "text": "It was released on May 5."}]}]}
    path = tmp_path / "claude.json"
    path.write_text(json.dumps([conv]))
    [parsed], _ = parse_file(path)
    answer = parsed.messages[1]
    assert answer.metadata["thinking"] == ["Planning a search"]
    assert '[tool use: web_search (Web)] {"query": "release date"}' in answer.text
    assert "[tool result: web_search] Release notes https://example.org/r May 5" in answer.text
    assert "Planning" not in answer.text


def _owui_row(row_id, *, content="hello", damaged=False):
    tree = {"m1": {"id": "m1", "parentId": None, "childrenIds": ["m2", "m3"], "role": "user",
                   "content": content, "timestamp": 1744577557, "files": [{"type": "file", "name": "plan.pdf"}]},
            "m2": {"id": "m2", "parentId": "m1", "childrenIds": [], "role": "assistant",
                   "content": "first answer", "timestamp": 1744577560},
            "m3": {"id": "m3", "parentId": "m1", "childrenIds": [], "role": "assistant", "timestamp": 1744577570,
                   "content": '<details type="reasoning" done="true"><summary>Thought</summary>\n> weighing it\n</details>'
                              '<details type="tool_calls" done="true" name="search" arguments="{&quot;q&quot;: &quot;x&quot;}"'
                              ' result="&quot;found&quot;"><summary>Tool</summary></details>regenerated answer'}}
    chat = {"id": "", "title": f"chat {row_id}", "history": {"messages": tree, "currentId": "m3"},
            "messages": list(tree.values()), "timestamp": 1744577557000}
    if damaged:
        chat["history"]["messages"]["m1"]["timestamp"] = float("nan")
    return {"id": row_id, "user_id": "u1", "title": f"chat {row_id}", "chat": chat,
            "created_at": 1744577557, "updated_at": 1744577570, "archived": False, "meta": {"tags": ["t"]}}


def test_openwebui_export_rows_follow_current_id_and_keep_tools_reasoning_and_files(tmp_path):
    path = tmp_path / "chat-export-1744577600000.json"
    path.write_text(json.dumps([_owui_row("r1"), _owui_row("r2", damaged=True)], allow_nan=True))
    assert detect_format(path) == "openwebui"
    convs, report = parse_file(path)
    assert [c.conversation_id for c in convs] == ["r1"]
    assert report.skipped == [("r2", "timestamp of message m1 is NaN, not a date")]
    conv = convs[0]
    assert [m.message_id for m in conv.messages] == ["m1", "m3"] and conv.metadata["dropped_messages"] == 1
    assert conv.messages[0].text == "hello\n[file: plan.pdf]"
    answer = conv.messages[1]
    assert answer.text == '[tool use: search] {"q": "x"}\n[tool result] found\nregenerated answer'
    assert answer.metadata["thinking"] == ["weighing it"] and conv.metadata["tags"] == ["t"]


def test_copilot_session_keeps_thinking_in_metadata_and_names_itself_by_session_id(tmp_path):
    session = {"version": 3, "requesterUsername": "me", "responderUsername": "GitHub Copilot",
               "sessionId": "s-1", "customTitle": "Refactor", "creationDate": 1760000000000, "requests": [
                   {"requestId": "request_1", "timestamp": 1760000001000, "modelId": "copilot/gpt-5",
                    "message": {"text": "rename foo"}, "variableData": {"variables": [{"name": "file:foo.py"}]},
                    "response": [{"kind": "thinking", "value": "it is in foo.py"},
                                 {"value": "Renamed "}, {"value": "`foo` to `bar`."}],
                    "result": {"metadata": {}}},
                   {"requestId": "request_2", "timestamp": 1760000002000, "message": {"text": "stop"},
                    "response": [], "isCanceled": True}]}
    path = tmp_path / "s-1.json"
    path.write_text(json.dumps(session))
    assert detect_format(path) == "copilot-chat"
    [conv], _ = parse_file(path)
    assert conv.conversation_id == "s-1" and conv.title == "Refactor"
    assert [m.text for m in conv.messages] == ["rename foo\n[attached: file:foo.py]", "Renamed `foo` to `bar`.", "stop"]
    assert conv.messages[1].metadata["thinking"] == ["it is in foo.py"]
    assert conv.messages[2].metadata["status"] == "canceled"


@pytest.mark.parametrize("body, why", [
    ("[" + "[" * 5000 + "]" * 5000 + "]", "nested more than"),
    ('{"requests": [{"requestId": "r", "timestamp": NaN, "message": {"text": "hi"}}]}', "NaN"),
])
def test_a_hostile_copilot_session_is_one_skipped_line_not_a_crash(tmp_path, body, why):
    path = tmp_path / "chat.json"
    path.write_text('{"responderUsername": "GitHub Copilot", "requests": ' + body[len('{"requests": '):]
                    if body.startswith('{"requests"') else '{"responderUsername": "x", "requests": ' + body + "}")
    convs, report = parse_file(path, "copilot-chat")
    assert convs == [] and len(report.skipped) == 1 and why in report.skipped[0][1]


def test_openwebui_truncated_export_is_a_bad_file_before_anything_is_yielded(tmp_path):
    path = tmp_path / "chat-export.json"
    path.write_text(json.dumps([_owui_row("r1"), _owui_row("r2")])[:-40])
    with pytest.raises(ExportFormatError, match="truncated"):
        next(iter_conversations(path))


def test_openwebui_duplicate_row_ids_are_both_parsed_for_the_merge_to_choose(tmp_path):
    path = tmp_path / "dupes.json"
    path.write_text(json.dumps([_owui_row("r1"), _owui_row("r1", content="edited")]))
    convs, _ = parse_file(path)
    assert [c.conversation_id for c in convs] == ["r1", "r1"]
    assert convs[0].content_hash() != convs[1].content_hash()


@pytest.mark.parametrize("data, says", [
    (b"\xff\xfe\x00\x00garbage" + b"\x00" * 10, "UTF-16"),
    ("caf\u00e9 notes".encode("latin-1"), "not valid UTF-8"),
    (b"abc\x00def", "binary"),
])
def test_a_note_with_a_bad_encoding_is_one_clear_error_naming_the_file(tmp_path, data, says):
    path = tmp_path / "bad.md"
    path.write_bytes(data)
    with pytest.raises(ExportFormatError, match=says) as err:
        list(iter_conversations(path))
    assert "bad.md" in str(err.value) and "\n" not in str(err.value)


def test_notes_front_matter_damage_keeps_the_note_and_empty_notes_are_counted(tmp_path):
    (tmp_path / "bomb.md").write_text("---\na: &a [1,2]\nb: [*a,*a,*a]\n---\nbody text\n")
    (tmp_path / "broken.md").write_text("---\ntitle: [unclosed\n---\nstill here\n")
    (tmp_path / "empty.md").write_text("---\n---\n")
    [bomb], _ = parse_file(tmp_path / "bomb.md")
    assert "body text" in bomb.messages[0].text and "anchors" in bomb.metadata["front_matter_error"]
    [broken], _ = parse_file(tmp_path / "broken.md")
    assert "still here" in broken.messages[0].text and "not valid YAML" in broken.metadata["front_matter_error"]
    convs, report = parse_file(tmp_path / "empty.md")
    assert convs == [] and report.skipped == [("empty.md", "empty conversation")]


def test_specstory_and_notes_are_never_taken_for_each_other(tmp_path):
    session = tmp_path / "2025-11-07_11-18Z-x.md"
    session.write_text("<!-- Generated by SpecStory -->\n\n_**User**_\n\nhi\n\n---\n\n_**Assistant**_\n\nhello\n")
    note = tmp_path / "note.md"
    note.write_text("# Groceries\n\n- User research ideas\n- Agent meeting --- notes\n")
    assert detect_format(session) == "cursor" and detect_format(note) == "notes"
    [conv], _ = parse_file(session)
    assert [m.role for m in conv.messages] == ["user", "assistant"] and conv.created_at == "2025-11-07T11:18:00Z"
    with pytest.raises(ExportFormatError, match="looks like a notes file, not cursor"):
        list(iter_conversations(note, "cursor"))
    with pytest.raises(ExportFormatError, match="looks like a cursor file, not notes"):
        list(iter_conversations(session, "notes"))


def test_a_mixed_folder_reads_every_format_and_names_notes_by_their_path(tmp_path, shared_data):
    data = shared_data
    folder = tmp_path / "exports"
    (folder / "vault" / "Daily").mkdir(parents=True)
    (folder / "vault" / ".obsidian").mkdir()
    (folder / "vault" / ".obsidian" / "workspace.md").write_text("settings, not a note")
    (folder / "vault" / "Daily" / "2024-01-02.md").write_text("ran 5k")
    (folder / "vault" / "Notes.txt").write_text("plain text note")
    (folder / "history" / ".specstory").mkdir(parents=True)
    for src in [*(data / "cursor").iterdir(), *(data / "copilot-chat").iterdir(), *(data / "openwebui").iterdir(),
                data / "chatgpt" / "librechat__chatgpt-tree.json"]:
        (folder / src.name).write_bytes(src.read_bytes())
    files = export_files(folder)
    assert not any(".obsidian" in str(f) for f in files)
    found = {}
    for f in files:
        report = ParseReport(path=str(f), format="auto")
        for conv in iter_conversations(f, report=report, root=folder):
            found.setdefault(conv.source_format, []).append(conv.conversation_id)
    assert {k: len(v) for k, v in found.items()} == {"chatgpt": 1, "copilot-chat": 3, "cursor": 3,
                                                      "openwebui": 1, "notes": 2}
    assert sorted(found["notes"]) == ["vault/Daily/2024-01-02.md", "vault/Notes.txt"]
