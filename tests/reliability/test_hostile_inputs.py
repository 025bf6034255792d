"""Hostile export files: nested 10,000 levels deep, a lone surrogate escape, or named with
bytes that are not UTF-8. A file named so is one bad file (reported by a printable name,
skipped); a hostile conversation inside a file is one skipped conversation (issue 27: the unit
of failure is the conversation); the rest of the build goes on."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synix_assets.app.run import run_build
from synix_assets.parsers.detect import parse_file
from synix_resources.errors import ExportFormatError
from synix_resources.store.artifact_store import ArtifactStore

DEPTH = 10_000
SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"


def _chatgpt_entry(conv_id: str, parts_json: str, title_json: str = '"T"') -> str:
    node = ('{"id": "a", "parent": null, "children": [], "message": {"id": "a", '
            '"author": {"role": "user"}, "create_time": 1700000000, '
            f'"content": {{"content_type": "text", "parts": {parts_json}}}}}}}')
    return (f'{{"id": "{conv_id}", "title": {title_json}, "create_time": 1700000000, '
            f'"mapping": {{"a": {node}}}, "current_node": "a"}}')


def _claude_entry(conv_id: str, name_json: str) -> str:
    return (f'{{"uuid": "{conv_id}", "name": {name_json}, "chat_messages": [{{"uuid": "m1", '
            f'"sender": "human", "text": "hello", "created_at": "2024-01-01T00:00:00Z"}}]}}')


def write_hostile_files(folder: Path) -> dict[str, str]:
    """file name on disk (as bytes for the non-UTF-8 one) → the printable name an error must show."""
    deep_list = "[" * DEPTH + "]" * DEPTH
    deep_dict = '{"a": ' * DEPTH + "1" + "}" * DEPTH
    (folder / "deep-line.jsonl").write_text(
        '{"type": "user", "sessionId": "s1", "uuid": "u1", "message": {"role": "user", '
        f'"content": {deep_list}}}}}\n')
    (folder / "deep-parts.json").write_text(f"[{_chatgpt_entry('deep-parts', f'[{deep_list}]')}]")
    (folder / "deep-title.json").write_text(f"[{_claude_entry('deep-title', deep_dict)}]")
    with open(os.path.join(os.fsencode(folder), b"\xff\xfe-latin.json"), "w") as fh:
        fh.write(f"[{_claude_entry('bad-name', json.dumps('fine content'))}]")
    # JSON may escape a lone surrogate; json.loads (Claude Code lines) decodes it as is
    (folder / "surrogate.jsonl").write_text(
        '{"type": "user", "sessionId": "s\\udcff", "uuid": "u1", "message": {"role": "user", '
        '"content": "hi \\ud800"}}\n')
    return {"deep-line.jsonl": "deep-line.jsonl", "deep-parts.json": "deep-parts.json",
            "deep-title.json": "deep-title.json", "latin": "\\xff\\xfe-latin.json",
            "surrogate.jsonl": "surrogate.jsonl"}


HOSTILE_CONVERSATIONS = {  # file → (the conversation it holds, why it is skipped)
    "deep-line.jsonl": ("s1", "line 1 is nested more than 100 levels deep"),
    "deep-parts.json": ("deep-parts", "is nested more than 100 levels deep"),
    "deep-title.json": ("deep-title", "is nested more than 100 levels deep"),
    "surrogate.jsonl": ("s\\udcff", "line 1 has a lone surrogate escape \\udcff in field sessionId"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CONVERSATIONS))
def test_hostile_conversation_is_skipped_by_its_id_not_the_file(tmp_path, name):
    write_hostile_files(tmp_path)
    conversations, report = parse_file(tmp_path / name)
    assert conversations == [] and report.skipped == [HOSTILE_CONVERSATIONS[name]]
    for conv_id, reason in report.skipped:
        (conv_id + reason).encode("utf-8")  # printable and storable: no lone surrogates left


def test_non_utf8_file_name_is_refused_by_its_escaped_name(tmp_path):
    write_hostile_files(tmp_path)
    bad = next(p for p in tmp_path.iterdir() if p.name.endswith("-latin.json"))
    with pytest.raises(ExportFormatError) as info:
        parse_file(bad)
    line = info.value.one_line()
    assert "\\xff\\xfe-latin.json" in line and "not valid UTF-8" in line
    line.encode("utf-8")  # printable and storable: no lone surrogates left


def test_chatgpt_parts_given_as_a_string_is_one_text(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(f"[{_chatgpt_entry('str-parts', json.dumps('one whole sentence'))}]")
    convs, _ = parse_file(path)
    assert [m.text for m in convs[0].messages] == ["one whole sentence"]


def test_a_title_that_is_not_text_is_no_title(tmp_path):
    path = tmp_path / "conversations.json"
    entry = _claude_entry("dict-title", json.dumps({"a": {"b": 1}}))
    path.write_text(f"[{entry}]")
    convs, _ = parse_file(path)
    assert convs[0].title is None and "# (untitled)" in convs[0].transcript()


def test_hostile_files_are_skipped_and_everything_else_builds(small_project):
    paths = small_project(3)
    expected = write_hostile_files(paths.root / "exports")
    report = run_build(paths)
    failed = {s["file"].rsplit("/", 1)[-1]: s["error"] for s in report.skipped_inputs if "error" in s}
    assert set(failed) == {expected["latin"]}
    for error in failed.values():
        error.encode("utf-8")
        assert "\n" not in error
    skipped = {s["file"].rsplit("/", 1)[-1]: (s["conversation_id"], s["reason"])
               for s in report.skipped_inputs if "error" not in s}
    assert skipped == HOSTILE_CONVERSATIONS
    store = ArtifactStore(paths.store)
    try:
        assert sorted(t.group_key for t in store.list_layer("transcripts")) == ["conv-0", "conv-1", "conv-2"]
        assert len(store.current_index("episodes")) == 3
    finally:
        store.close()


@pytest.mark.slow
def test_cli_run_reports_each_hostile_file_and_exits_as_for_any_bad_file(small_project):
    paths = small_project(2)
    expected = write_hostile_files(paths.root / "exports")
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "NO_COLOR": "1", "COLUMNS": "300"}
    env.pop("SYNIX_DEBUG", None)
    proc = subprocess.run([SYNIX, "-p", str(paths.root), "run"], env=env, capture_output=True,
                          text=True, errors="replace", timeout=300)
    assert proc.returncode == 1, proc.stderr  # the exit code of any unreadable export file (latin)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    for printable in expected.values():
        lines = [l for l in proc.stderr.splitlines() if printable in l]
        assert len(lines) == 1, (printable, proc.stderr)
    store = ArtifactStore(paths.store)
    try:
        assert len(store.current_index("episodes")) == 2
    finally:
        store.close()
