"""Format detection on every file of ../shared/data, and tool history folders as sources: nested
folders, a mixed folder of every coding agent, `synix init --from FOLDER`."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from synix_assets.parsers.detect import FORMATS, detect_format, parse_file
from synix_assets.sources.reader import export_files
from synix_resources.errors import ExportFormatError
from tests.support import corpus

DATA = corpus.DATA
ALL_FILES = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name != "README.md")
# folders whose files are a format this branch reads, and the name of that format
KNOWN = {"chatgpt": "chatgpt", "claude": "claude", "claude-code": "claude-code",
         "codex-cli": "codex-cli", "gemini-cli": "gemini-cli", "openwebui": "openwebui",
         "copilot-chat": "copilot-chat", "cursor": "cursor", "notes-obsidian": "notes"}


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.name[-40:]}")
@pytest.mark.corpus
def test_every_shared_file_is_its_own_format_or_refused_never_another_one(path):
    folder = path.parent.name
    expected = KNOWN.get(folder) or (folder if folder in FORMATS else None)
    if expected is not None:
        assert detect_format(path) == expected
        return
    try:
        found = detect_format(path)
    except ExportFormatError as exc:
        assert str(path) in exc.one_line()
        return
    assert found not in KNOWN.values(), f"{folder} file taken for {found}"


def _copy(src: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


@pytest.fixture
def history(tmp_path, shared_data) -> Path:
    """A folder laid out as the tools lay theirs out, all mixed together."""
    root = tmp_path / "history"
    codex = next((shared_data / "codex-cli").glob("*T18-39-45*"))
    _copy(codex, root / "codex" / "2026" / "01" / "02" / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl")
    gemini = root / "gemini" / "fb8e242a" / "chats"
    _copy(next((shared_data / "gemini-cli").glob("*session-*")), gemini / "session-2025-12-01T21-45-5b959dae.json")
    _copy(next((shared_data / "gemini-cli").glob("*logs.json")), gemini.parent / "logs.json")
    claude = root / "claude" / "-tmp-private"
    _copy(next((shared_data / "claude-code").glob("*9eda1058*")), claude / "9eda1058.jsonl")
    _copy(next((shared_data / "claude-code").glob("*agent-a485154*")), claude / "e9fb405b" / "subagents" / "agent-a485154.jsonl")
    _copy(shared_data / "chatgpt" / "librechat__chatgpt-tree.json", root / "conversations.json")
    (root / ".hidden").mkdir()
    _copy(shared_data / "chatgpt" / "librechat__chatgpt-tree.json", root / ".hidden" / "old.json")
    (root / "notes.txt").write_text("a note beside the sessions")
    (root / "settings.toml").write_text("not an export nor a note")
    return root


def test_a_mixed_history_folder_is_read_down_every_level_and_each_file_by_its_format(history):
    files = export_files(history)
    assert [f.relative_to(history).as_posix() for f in files] == [
        "claude/-tmp-private/9eda1058.jsonl",
        "claude/-tmp-private/e9fb405b/subagents/agent-a485154.jsonl",
        "codex/2026/01/02/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
        "conversations.json",
        "gemini/fb8e242a/chats/session-2025-12-01T21-45-5b959dae.json",
        "gemini/fb8e242a/logs.json",
        "notes.txt",
    ]
    formats = {f.name: parse_file(f)[1].format for f in files}
    assert sorted(formats.values()) == ["chatgpt", "claude-code", "claude-code", "codex-cli",
                                        "gemini-cli", "gemini-cli", "notes"]
    ids = {c.conversation_id for f in files for c in parse_file(f)[0]}
    assert {"019b7f94-51b4-7593-922e-ba12b5b73b52", "5b959dae-8655-4cd1-b10f-720b8c336ea2",
            "9eda1058-9706-484a-b992-d03f9cfa2546",
            "e9fb405b-169f-40eb-9396-7e75076f045d.agent-a485154"} <= ids


def test_each_format_can_be_named_and_a_wrong_name_is_one_line(history):
    rollout = next(history.rglob("rollout-*.jsonl"))
    assert parse_file(rollout, format="codex-cli")[1].conversations == 1
    with pytest.raises(ExportFormatError, match="looks like a codex-cli export, not gemini-cli"):
        parse_file(rollout, format="gemini-cli")


def test_init_from_a_history_folder_reads_it_in_place_and_scans_its_sessions(history, tmp_path):
    from synix_assets.app.init import create_project
    from synix_assets.pipeline.loader import load_pipeline
    from synix_assets.sources.reader import SourceReader
    from synix_resources.store.artifact_store import ArtifactStore

    folder = history / "codex"
    root, _ = create_project(tmp_path / "mem", exports=[str(folder), str(history / "gemini")])
    text = (root / "pipeline.py").read_text()
    assert f"pipeline.source('history', path={str(folder.resolve())!r}" in text
    assert 'from_=["exports", "history", "history_2"]' in text
    assert not any((root / "exports").iterdir())  # read where it is, not copied
    pipeline = load_pipeline(root / "pipeline.py")
    with ArtifactStore(tmp_path / "store.db") as store:
        scan = SourceReader(pipeline, store).scan()
    assert scan.failed_files == [] and scan.skipped == []
    assert sorted((s.source, s.format, s.message_count) for s in scan.summaries) == [
        ("history", "codex-cli", 7), ("history_2", "gemini-cli", 3), ("history_2", "gemini-cli", 22)]


def test_init_with_a_missing_folder_is_one_line_naming_it(tmp_path):
    from synix_assets.app.init import create_project

    with pytest.raises(ExportFormatError) as info:
        create_project(tmp_path / "mem", exports=[str(tmp_path / "no-such-folder")])
    assert "no-such-folder does not exist" in info.value.one_line()
    assert "~/.codex/sessions" in info.value.one_line()
