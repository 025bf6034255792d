"""Bad inputs: each has a defined behaviour. A bad export file is reported in
`report.skipped_inputs`, nothing is written for it, the other files build, and conversations
already built from a file that later turns bad are kept."""
from __future__ import annotations

import json
import zipfile

import pytest

from synix_assets.app.run import run_build
from synix_assets.parsers.detect import parse_file
from synix_resources.errors import ExportFormatError, PipelineDefinitionError
from synix_resources.llm.fake import FakeClient
from synix_resources.llm.types import LLMRequest
from synix_resources.store.artifact_store import ArtifactStore


def _chatgpt(conv_id, mapping, current_node, create_time=1700000000.0):
    return {"id": conv_id, "conversation_id": conv_id, "title": "T", "create_time": create_time,
            "update_time": create_time, "mapping": mapping, "current_node": current_node}


def _node(nid, parent, text, role="user", t=1700000000.0):
    return {"id": nid, "parent": parent, "children": [],
            "message": {"id": nid, "author": {"role": role}, "create_time": t,
                        "content": {"content_type": "text", "parts": [text]}}}


BAD_FILES = {
    "truncated.json": lambda good: good[: len(good) // 2],
    "no-conversations.zip": None,  # written below
    "binary.json": lambda good: bytes(range(256)) * 8,
    "empty.json": lambda good: b"",
    "latin1.json": lambda good: '[{"uuid": "x", "name": "caf\xe9"}]'.encode("latin-1"),
}


def test_bad_files_are_reported_skipped_and_never_hide_good_ones(small_project, claude_export,
                                                                  make_conversations):
    paths = small_project(3)
    exports = paths.root / "exports"
    good = (exports / "talks.json").read_bytes()
    for name, make in BAD_FILES.items():
        if make is None:
            with zipfile.ZipFile(exports / name, "w") as zf:
                zf.writestr("readme.txt", "no conversations here")
        else:
            (exports / name).write_bytes(make(good))
    # the same conversation id in a second export with different, newer content
    newer = make_conversations(1, months=("2025-03",))[0]
    newer["messages"].append(("human", "A later message only in the second export.", "2025-03-30T10:00:00Z"))
    claude_export(exports / "again.json", [newer])

    report = run_build(paths)
    skipped = {s["file"].rsplit("/", 1)[-1]: s["error"] for s in report.skipped_inputs}
    assert set(skipped) == set(BAD_FILES)
    assert all("\n" not in e and e for e in skipped.values())
    store = ArtifactStore(paths.store)
    try:
        transcripts = store.list_layer("transcripts")
        assert sorted(t.group_key for t in transcripts) == ["conv-0", "conv-1", "conv-2"]
        assert all(t.metadata["meta.source.path"].endswith(("talks.json", "again.json"))
                   for t in transcripts)
        # prefer_latest: the conversation with the later last message wins, once
        assert "later message only" in store.current("transcripts", "conv-0").content
    finally:
        store.close()

    # the good file turns bad (cut off mid-copy): its conversations stay built
    (exports / "talks.json").write_bytes(good[:100])
    report = run_build(paths)
    assert "talks.json" in {s["file"].rsplit("/", 1)[-1] for s in report.skipped_inputs}
    store = ArtifactStore(paths.store)
    try:
        assert len(store.current_index("transcripts")) == 3
        assert len(store.current_index("episodes")) == 3
    finally:
        store.close()


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_each_bad_file_is_one_export_format_error(tmp_path, name):
    path = tmp_path / name
    if BAD_FILES[name] is None:
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("readme.txt", "x")
    else:
        path.write_bytes(BAD_FILES[name](json.dumps([{"uuid": "a", "chat_messages": []}] * 50).encode()))
    with pytest.raises(ExportFormatError) as info:
        parse_file(path)
    assert "\n" not in info.value.one_line() and name in info.value.one_line()


def test_parent_cycle_and_dangling_current_node_are_skipped_or_repaired_not_fatal(tmp_path):
    cycle = _chatgpt("cycle", {"a": _node("a", "b", "first"), "b": _node("b", "a", "second")}, "b")
    dangling = _chatgpt("dangling", {"r": _node("r", None, "only message")}, "missing-node")
    fine = _chatgpt("fine", {"r": _node("r", None, "hello there")}, "r")
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([cycle, dangling, fine]))
    convs, report = parse_file(path)
    ids = {c.conversation_id for c in convs}
    assert "fine" in ids
    skipped = dict(report.skipped)
    for cid in ("cycle", "dangling"):
        assert (cid in ids) != (cid in skipped)  # each is either repaired or skipped with a reason
    for c in convs:
        assert c.messages and len({m.message_id for m in c.messages}) == len(c.messages)


def test_missing_timestamps_parse_with_none_dates(tmp_path):
    conv = _chatgpt("no-time", {"r": _node("r", None, "undated", t=None)}, "r", create_time=None)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv]))
    convs, _ = parse_file(path)
    assert len(convs) == 1 and convs[0].created_at is None


def test_50_mb_single_message_parses_and_is_split_for_a_bounded_context(tmp_path):
    big = ("All work and no play makes a long message. " * 1_200_000)[:50_000_000]
    conv = _chatgpt("huge", {"r": _node("r", None, big)}, "r")
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv]))
    convs, _ = parse_file(path)
    text = convs[0].transcript()
    assert len(text) >= 50_000_000
    # a 200k-token model: the episode request is map-reduced instead of failing
    client = FakeClient(context_tokens=200_000)
    request = LLMRequest(prompt="Summarise:\n" + text, label="episodes/huge",
                         sources=[("t", text)], render=lambda srcs: "Summarise:\n" + srcs[0][1])
    response = client.complete(request)
    assert response.text and client.calls > 1


def test_pipeline_with_syntax_error_is_a_definition_error(small_project):
    paths = small_project(1)
    paths.pipeline_file.write_text("from synix_assets.pipeline.api import Pipeline\npipeline = (\n")
    with pytest.raises(PipelineDefinitionError) as info:
        run_build(paths)
    assert "pipeline.py" in info.value.one_line()


def test_pipeline_from_missing_layer_is_a_definition_error(small_project):
    paths = small_project(1)
    text = paths.pipeline_file.read_text().replace('from_="episodes", period', 'from_="episodez", period')
    paths.pipeline_file.write_text(text)
    with pytest.raises(PipelineDefinitionError) as info:
        run_build(paths)
    assert "episodez" in info.value.one_line()
