"""Open WebUI, Copilot Chat, SpecStory (Cursor) and notes: each real file in ../shared/data parses
to the counts and fields its README states, and every shared file is detected as its own format."""
from __future__ import annotations


import pytest

from synix_assets.parsers.detect import FORMATS, detect_format, parse_file
from synix_resources.errors import ExportFormatError
from tests.support import corpus

pytestmark = pytest.mark.corpus
DATA = corpus.DATA
FOLDER_FORMAT = {"chatgpt": "chatgpt", "claude": "claude", "claude-code": "claude-code",
                 "openwebui": "openwebui", "copilot-chat": "copilot-chat", "cursor": "cursor",
                 "notes-obsidian": "notes", "codex-cli": "codex-cli", "gemini-cli": "gemini-cli"}
NEW = {"openwebui", "copilot-chat", "cursor", "notes"}


def _one(folder: str, part: str):
    path = next(p for p in (DATA / folder).iterdir() if part in p.name)
    conversations, report = parse_file(path)
    return path, conversations, report


def _shared_files():
    return sorted(p for p in DATA.rglob("*") if p.is_file() and p.parent != DATA and "locomo" not in p.parts)


@pytest.mark.parametrize("path", _shared_files(), ids=lambda p: f"{p.parent.name}/{p.name[:50]}")
def test_every_shared_file_is_detected_as_its_own_format_and_never_as_another(path):
    expected = FOLDER_FORMAT.get(path.parent.name)
    if expected is None:  # a format no parser reads: never mistaken for one of these
        try:
            found = detect_format(path)
        except ExportFormatError:  # unknown here, or damaged for the parser it was taken for
            return
        assert found not in NEW
        return
    assert detect_format(path) == expected
    assert expected in FORMATS


def test_openwebui_chat_object_is_one_chat_of_two_messages_on_the_current_branch():
    _, [chat], report = _one("openwebui", "webui-json")
    assert report.format == "openwebui" and report.messages == 2 and not report.skipped
    assert chat.title == "\U0001f9e0 Goldwater Rule Ethics"
    assert chat.conversation_id == "openwebui-5ae90291-abf9-453f-9f7d-78f3753af40c"  # chat id is ""
    assert [m.role for m in chat.messages] == ["user", "assistant"]
    assert chat.messages[0].message_id == "5ae90291-abf9-453f-9f7d-78f3753af40c"
    assert chat.created_at.startswith("2025-04-13") and chat.messages[1].created_at.startswith("2025-04-13")
    assert chat.messages[1].metadata["model"] == "deepseek/deepseek-chat:free"
    assert chat.messages[1].metadata["usage"]["total_tokens"] == 336
    assert "can''t" in chat.messages[0].text  # the sample's SQL doubling is left as written


def test_copilot_exports_give_one_session_each_with_prompts_answers_and_mcp_calls():
    _, [hello], _ = _one("copilot-chat", "parse-export-chat-json_chat")
    assert [m.text for m in hello.messages if m.role == "user"] == ["hi", "hello"]
    assert len(hello.messages) == 4 and hello.messages[1].text == "Hello! How can I help you today?"
    assert hello.created_at.startswith("2025-10-02") and hello.source_format == "copilot-chat"

    _, [failed], _ = _one("copilot-chat", "with-error")
    assert [m.text for m in failed.messages] == ["asdasd"]  # a failed request has no answer
    assert failed.messages[0].metadata["status"] == "failed"
    assert "request failed" in failed.messages[0].metadata["error"]

    _, [mcp], _ = _one("copilot-chat", "succes_mcp")
    answer = mcp.messages[1]
    assert answer.metadata["tools"] == ["mcp_micmicai-mcp_get_documents", "mcp_micmicai-mcp_get_entries",
                                        "mcp_micmicai-mcp_update_entry_fields"]
    assert answer.metadata["mcp_servers"] == ["MimicAI MCP"]
    assert answer.text.count("[tool use: ") == 3 and answer.text.count("[tool result] ") == 3
    assert '[tool use: mcp_micmicai-mcp_update_entry_fields] {"entry_id": "686"' in answer.text
    assert all(len(line) < 200 for line in answer.text.splitlines() if line.startswith("[tool"))
    assert mcp.metadata["workspace"].endswith("copilot-chat-analyzer/")
    assert "<context>" not in answer.text and "<context>" not in mcp.messages[0].text


@pytest.mark.parametrize("part, users, agents, model, tools", [
    ("propose-agents", 1, 1, ["claude-4.5-sonnet-thinking"], {"read_file": 5}),
    ("check-and-fix", 6, 6, ["grok-code-fast-1"], {"read_file": 5, "search_replace": 5, "read_lints": 2}),
    ("remove-animation", 4, None, ["claude-4.5-sonnet-thinking", "gpt-5.1-codex-high"], None),
])
def test_specstory_sessions_keep_turns_models_and_tool_names(part, users, agents, model, tools):
    path, [session], report = _one("cursor", part)
    assert report.format == "cursor"
    roles = [m.role for m in session.messages]
    assert roles.count("user") == users
    if agents is not None:
        assert roles.count("assistant") == agents
    assert session.metadata["models"] == model and session.metadata["tool"] == "cursor"
    assert session.conversation_id.count("-") == 4  # the session uuid from the comment line
    used = [t for m in session.messages for t in m.metadata.get("tools", [])]
    for name, count in (tools or {}).items():
        assert used.count(name) == count
    text = session.transcript()
    assert "<think>" not in text and "<tool-use" not in text and "Thought Process" not in text
    assert any(m.metadata.get("thinking") for m in session.messages)
    assert all(m.created_at == session.created_at for m in session.messages if m.role == "user")


def test_specstory_tool_blocks_are_one_line_and_diffs_stay_out():
    _, [session], _ = _one("cursor", "remove-animation")
    text = session.transcript()
    assert "&quot;" not in text and "```diff" not in text
    assert "[tool use: " in text


@pytest.mark.parametrize("part, title, date, needle", [
    ("Meeting with Steph", "kepano-kepano-obsidian__Notes_2023-09-12 Meeting with Steph", "2023-09-12",
     "people: [[Steph Ango]]"),
    ("Evergreen", "kepano-kepano-obsidian__Notes_Evergreen notes turn ideas into objects that you can manipulate",
     "2023-09-14", "Evergreen notes allow you"),
    ("Daily_2023", "kepano-kepano-obsidian__Daily_2023-09-12", "2023-09-12", "![[Daily.base]]"),
])
def test_each_obsidian_note_is_one_transcript_with_title_date_and_text(part, title, date, needle):
    path, [note], report = _one("notes-obsidian", part)
    assert report.format == "notes" and report.messages == 1
    assert note.title == title and note.created_at.startswith(date)
    assert note.conversation_id == path.name and note.messages[0].role == "user"
    assert needle in note.messages[0].text


def test_note_date_comes_from_the_file_name_when_front_matter_has_none():
    _, [note], _ = _one("notes-obsidian", "Daily_2023")
    assert note.metadata["date_source"] == "file name"
    _, [evergreen], _ = _one("notes-obsidian", "Evergreen")
    assert evergreen.metadata["date_source"] == "front matter"
    assert evergreen.metadata["properties"]["tags"] == ["0\U0001f332"]
    assert "Everything is a remix" in evergreen.metadata["links"]


@pytest.mark.parametrize("folder, part, conversations, messages", [
    ("chatgpt", "librechat__chatgpt-export", 2, 19),
    ("chatgpt", "librechat__chatgpt-tree", 1, 6),
    ("chatgpt", "pkuppens", 192, 1359),
    ("chatgpt", "gpt_example", 1, 10),
    ("claude", "simonw", 1, 20),
    ("claude", "now2ai", 1, 12),
    ("claude", "claude_example", 1, 10),
])
def test_chatgpt_and_claude_real_files_still_parse_to_the_same_counts(folder, part, conversations, messages):
    _, convs, report = _one(folder, part)
    assert (report.conversations, report.messages) == (conversations, messages)
