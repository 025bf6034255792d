"""ChatGPT export parsing against the real sample files and synthetic edge cases.

Expected counts are derived from shared/data/README.md: a message is counted when it lies on
the current branch (current_node → root) and is not a hidden/empty system message.
"""
from __future__ import annotations

import json
import logging
import zipfile

import pytest

from synix_assets.parsers.detect import iter_conversations, parse_file
from synix_assets.parsers.model import ParseReport
from tests.support import corpus

DATA = corpus.DATA
CHATGPT = DATA / "chatgpt"
TREE = CHATGPT / "librechat__chatgpt-tree.json"
EXPORT = CHATGPT / "librechat__chatgpt-export.json"
PKUPPENS = CHATGPT / "pkuppens-my_chat_gpt__history_download_conversations.json"


@pytest.mark.parametrize("path, conversations, messages", [
    # 12 messages: 1 hidden system + 5 off-branch → 6 shown.
    (TREE, 1, 6),
    # 21 messages, 2 hidden system messages, no branches → 19.
    (EXPORT, 2, 19),
    # 1,560 messages − 192 empty system messages − 9 off-branch (4 regenerations + …) → 1,359.
    (PKUPPENS, 192, 1359),
])
@pytest.mark.corpus
def test_real_chatgpt_files_give_expected_conversation_and_message_counts(path, conversations, messages):
    convs, report = parse_file(path)
    assert report.format == "chatgpt"
    assert (report.conversations, report.messages, report.skipped) == (conversations, messages, [])
    assert len(convs) == conversations
    assert sum(c.message_count for c in convs) == messages
    assert report.bytes == path.stat().st_size


@pytest.mark.corpus
def test_tree_file_resolves_both_branch_points_to_the_current_branch():
    [conv] = parse_file(TREE)[0]
    texts = [m.text for m in conv.messages]
    assert [m.role for m in conv.messages] == ["user", "assistant"] * 3
    # Edit branch point: "hi again" (current) replaced "so cool bro" (abandoned subtree).
    assert texts[2] == "hi again"
    assert not any("so cool bro" in t or "tell me a story" in t for t in texts)
    # Regenerate branch point: the answer is the current_node leaf, not its sibling.
    assert conv.messages[-1].message_id == "f63b8e17-aa5c-4ca6-a1bf-d4d285e269b8"
    assert conv.metadata["dropped_branches"] == 2
    assert conv.metadata["dropped_messages"] == 5
    assert "current_node_fallback" not in conv.metadata


@pytest.mark.corpus
def test_hidden_system_messages_are_dropped():
    [conv] = parse_file(TREE)[0]
    assert all(m.role != "system" for m in conv.messages)


@pytest.mark.corpus
def test_tool_chain_is_rendered_readably():
    convs, _ = parse_file(EXPORT)
    web = next(c for c in convs if "Web Search" in (c.title or ""))
    kinds = [m.metadata["content_type"] for m in web.messages]
    assert kinds.count("code") == 4 and kinds.count("tether_quote") == 3
    call = next(m for m in web.messages if m.metadata["content_type"] == "code")
    assert call.text.startswith("[tool call → browser]") and "search(" in call.text
    quote = next(m for m in web.messages if m.metadata["content_type"] == "tether_quote")
    assert quote.role == "tool" and quote.author == "browser" and quote.text.startswith("[quote:")
    assert "【" in web.transcript()  # \u3010 escapes decoded


@pytest.mark.corpus
def test_pkuppens_old_format_uses_id_decodes_escapes_and_renders_errors_and_plugins():
    convs, _ = parse_file(PKUPPENS)
    assert len({c.conversation_id for c in convs}) == 192
    all_text = "\n".join(m.text for c in convs for m in c.messages)
    assert "【" in all_text and "ë" in all_text and "€" in all_text
    assert "\\u" not in all_text
    errors = [m for c in convs for m in c.messages if m.metadata["content_type"] == "system_error"]
    assert len(errors) == 2 and errors[0].text.startswith("[error: tool_error]")
    plugin = [m for c in convs for m in c.messages if m.author == "show_me.get_MermaidRoute"]
    assert plugin and plugin[0].role == "tool"
    # Conversations with no assistant reply are still conversations.
    assert sum(1 for c in convs if all(m.role != "assistant" for m in c.messages)) == 3
    assert sum(c.metadata["dropped_branches"] for c in convs) == 4
    assert all(c.created_at and c.created_at.endswith("Z") for c in convs)


@pytest.mark.corpus
def test_epoch_times_become_utc_iso_strings():
    [conv] = parse_file(TREE)[0]
    assert (conv.created_at, conv.updated_at) == ("2024-05-01T17:37:11Z", "2024-05-01T17:37:40Z")
    assert all(m.created_at and len(m.created_at) == 20 for m in conv.messages)


@pytest.mark.corpus
def test_transcript_is_numbered_and_deterministic():
    first = parse_file(TREE)[0][0]
    second = parse_file(TREE)[0][0]
    assert first.transcript() == second.transcript()
    assert first.content_hash() == second.content_hash()
    assert "[#1 2024-05-01 17:37 UTC] User:\nhi there" in first.transcript()
    assert "Conversation: d5dc5307-6807-41a0-8b04-4acee626eeb7" in first.transcript()


# --- synthetic cases ------------------------------------------------------------------------

def _node(nid, parent, role, text, t=1700000000.0, children=(), ctype="text", **extra):
    content = {"content_type": ctype, "parts": [text]} if ctype in ("text", "multimodal_text") else text
    message = {"id": nid, "author": {"role": role, "name": extra.pop("name", None), "metadata": {}},
               "create_time": t, "content": content, "status": "finished_successfully",
               "weight": 1.0, "recipient": extra.pop("recipient", "all"), "metadata": extra.pop("metadata", {})}
    return {"id": nid, "message": message, "parent": parent, "children": list(children)}


def _conversation(conv_id, turns, current=None, **extra):
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for i, (role, text) in enumerate(turns):
        nid = f"{conv_id}-n{i}"
        mapping[parent]["children"].append(nid)
        mapping[nid] = _node(nid, parent, role, text, 1700000000.0 + 60 * i)
        parent = nid
    return {"title": f"Title {conv_id}", "create_time": 1700000000.0, "update_time": 1700001000.0,
            "mapping": mapping, "current_node": current or parent, "conversation_id": conv_id,
            "id": conv_id, **extra}


def _write(tmp_path, data, name="conversations.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_reexport_with_one_more_message_keeps_id_but_changes_hash(tmp_path):
    turns = [("user", "How long should the bulk ferment run?"), ("assistant", "About 5 hours at 24 C.")]
    old = parse_file(_write(tmp_path, [_conversation("c1", turns)], "a.json"))[0][0]
    new = parse_file(_write(tmp_path, [_conversation("c1", turns + [("user", "Thanks!")])], "b.json"))[0][0]
    assert old.conversation_id == new.conversation_id
    assert old.content_hash() != new.content_hash()


def test_same_text_different_ids_both_survive(tmp_path):
    turns = [("user", "Same question"), ("assistant", "Same answer")]
    convs, report = parse_file(_write(tmp_path, [_conversation("a", turns), _conversation("b", turns)]))
    assert [c.conversation_id for c in convs] == ["a", "b"]
    assert convs[0].content_hash() != convs[1].content_hash()


def test_hash_does_not_depend_on_file_location(tmp_path):
    data = [_conversation("c1", [("user", "hello"), ("assistant", "hi")])]
    one = parse_file(_write(tmp_path, data, "one.json"))[0][0]
    two = parse_file(_write(tmp_path, data, "two.json"))[0][0]
    assert one.source_path != two.source_path and one.content_hash() == two.content_hash()


def test_entry_without_mapping_is_skipped_with_a_warning_and_others_proceed(tmp_path, caplog):
    good = _conversation("good", [("user", "q"), ("assistant", "a")])
    broken = {"title": "broken", "id": "no-mapping-id"}
    report = ParseReport(path="x", format="auto")
    with caplog.at_level(logging.WARNING, logger="synix.parsers"):
        convs = list(iter_conversations(_write(tmp_path, [broken, good]), report=report))
    assert [c.conversation_id for c in convs] == ["good"]
    assert report.skipped == [("no-mapping-id", "entry has no message tree (mapping)")]
    assert "no-mapping-id" in caplog.text


def test_parent_cycle_skips_that_conversation_only(tmp_path):
    cyclic = _conversation("cyc", [("user", "q"), ("assistant", "a")])
    cyclic["mapping"]["root"]["parent"] = "cyc-n1"  # root → last node → … → root
    good = _conversation("good", [("user", "q"), ("assistant", "a")])
    convs, report = parse_file(_write(tmp_path, [cyclic, good]))
    assert [c.conversation_id for c in convs] == ["good"]
    assert report.skipped[0][0] == "cyc" and "cycle" in report.skipped[0][1]


def test_dangling_current_node_falls_back_to_the_newest_leaf(tmp_path):
    conv = _conversation("d", [("user", "q"), ("assistant", "first answer")], current="gone")
    # A later regenerated answer under the same user node.
    conv["mapping"]["d-n0"]["children"].append("regen")
    conv["mapping"]["regen"] = _node("regen", "d-n0", "assistant", "second answer", 1700009999.0)
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert [m.text for m in parsed.messages] == ["q", "second answer"]
    assert parsed.metadata["current_node_fallback"] is True


def test_missing_timestamps_give_none_not_errors(tmp_path):
    conv = _conversation("t", [("user", "q"), ("assistant", "a")])
    conv.pop("create_time"), conv.pop("update_time")
    for node in conv["mapping"].values():
        if node["message"]:
            node["message"]["create_time"] = None
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert parsed.created_at is None and parsed.messages[0].created_at is None
    assert "[#1] User:\nq" in parsed.transcript()


def test_modern_shapes_render_images_hide_context_and_accept_iso_times(tmp_path):
    conv = _conversation("m", [("user", "look"), ("assistant", "nice")])
    conv["create_time"] = "2025-12-30T22:12:41.767145Z"
    conv["mapping"]["m-n0"]["message"]["content"] = {
        "content_type": "multimodal_text",
        "parts": [{"content_type": "image_asset_pointer", "asset_pointer": "sediment://file_1"}, "look"]}
    ctx = {"id": "ctx", "parent": "root", "children": [], "message": {
        "id": "ctx", "author": {"role": "user"}, "create_time": None,
        "content": {"content_type": "user_editable_context", "user_profile": "I run marathons"},
        "metadata": {"is_visually_hidden_from_conversation": True}}}
    # Put the hidden custom-instructions node on the path: root → ctx → m-n0 …
    conv["mapping"]["root"]["children"] = ["ctx"]
    conv["mapping"]["ctx"] = {**ctx, "children": ["m-n0"]}
    conv["mapping"]["m-n0"]["parent"] = "ctx"
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert parsed.created_at == "2025-12-30T22:12:41Z"
    assert parsed.messages[0].text == "[image]\nlook"
    assert parsed.metadata["custom_instructions"] == {"user_profile": "I run marathons"}
    assert parsed.message_count == 2


def test_code_and_execution_output_render_and_unknown_types_are_counted_not_rendered(tmp_path):
    conv = _conversation("x", [("user", "compute")])
    m = conv["mapping"]
    m["x-n0"]["children"] = ["code"]
    m["code"] = _node("code", "x-n0", "assistant", {"content_type": "code", "language": "python",
                                                     "text": "print(2+2)"}, ctype="code",
                      recipient="python", children=["out"])
    m["out"] = _node("out", "code", "tool", {"content_type": "execution_output", "text": "4"},
                     ctype="execution_output", name="python", children=["weird"])
    m["weird"] = _node("weird", "out", "assistant", {"content_type": "super_widget"}, ctype="super_widget")
    conv["current_node"] = "weird"
    [parsed] = parse_file(_write(tmp_path, [conv]))[0]
    assert parsed.messages[1].text == "[tool call → python]\n```python\nprint(2+2)\n```"
    assert parsed.messages[2].text == "[output]\n4" and parsed.messages[2].label() == "Tool (python)"
    assert parsed.message_count == 3  # the unknown type is counted, not rendered
    assert parsed.metadata["unknown_content_types"] == {"super_widget": 1}


def test_wrapped_conversations_object_and_zip_are_read(tmp_path):
    data = [_conversation("z", [("user", "q"), ("assistant", "a")])]
    wrapped = _write(tmp_path, {"conversations": data}, "wrapped.json")
    assert [c.conversation_id for c in parse_file(wrapped)[0]] == ["z"]
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("user.json", "{}")
        zf.writestr("conversations.json", json.dumps(data))
    convs, report = parse_file(archive)
    assert [c.conversation_id for c in convs] == ["z"] and report.format == "chatgpt"


def test_single_huge_message_parses(tmp_path):
    big = ("All work and no play makes Sam a dull boy. " * 1_200_000)[:50_000_000]
    path = _write(tmp_path, [_conversation("big", [("user", big), ("assistant", "ok")])])
    [conv] = parse_file(path)[0]
    assert len(conv.messages[0].text) == len(big.strip())
