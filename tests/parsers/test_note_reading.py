"""Reading a note (parsers/textfiles.py): one read for a note, a large file read whole, a file
past the limit or a folder refused in one line, the modification time asked only for a note
without a date, and a text file told by its name as `Path.suffix` tells it."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from synix_assets.parsers import textfiles
from synix_assets.parsers.detect import iter_conversations
from synix_assets.parsers.model import ParseReport
from synix_resources.errors import ExportFormatError


@pytest.mark.parametrize("size", [0, 1, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 300_000])
def test_a_note_of_any_size_up_to_the_limit_is_read_whole(tmp_path, size):
    data = (b"note text\n" * (size // 10 + 1))[:size]
    path = tmp_path / "note.md"
    path.write_bytes(data)
    assert textfiles.read_bytes(path) == data


def test_a_file_past_the_limit_is_one_line_naming_it_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(textfiles, "MAX_TEXT_BYTES", 100_000)
    path = tmp_path / "dump.md"
    path.write_bytes(b"x" * 100_001)
    with pytest.raises(ExportFormatError) as caught:
        list(iter_conversations(path))
    assert caught.value.one_line().startswith(f"{path}: is 0 MB, too large for a note")
    assert "split it or move it out of the notes folder" in caught.value.one_line()
    path.write_bytes(b"x" * 100_000)  # at the limit: read
    assert len(list(iter_conversations(path))) == 1


def test_a_folder_named_like_a_note_is_one_line(tmp_path):
    folder = tmp_path / "looks-like.md"
    folder.mkdir()
    with pytest.raises(ExportFormatError, match="is a folder; pass the folder as the source"):
        list(iter_conversations(folder))
    with pytest.raises(ExportFormatError, match="file not found"):
        list(iter_conversations(tmp_path / "missing.md"))


def test_the_modification_time_dates_only_a_note_without_a_date_of_its_own(tmp_path):
    undated, dated = tmp_path / "undated.md", tmp_path / "2024-03-04 dated.md"
    for path in (undated, dated):
        path.write_text("text\n", encoding="utf-8")
        os.utime(path, (1_700_000_000, 1_700_000_000))
    [note] = iter_conversations(undated, root=tmp_path)
    assert (note.created_at, note.metadata["date_source"]) == ("2023-11-14T22:13:20Z", "file modification time")
    [note] = iter_conversations(dated, root=tmp_path)
    assert (note.created_at, note.metadata["date_source"]) == ("2024-03-04T00:00:00Z", "file name")


def test_bytes_already_read_are_parsed_without_opening_the_file_again(tmp_path):
    path = tmp_path / "n.md"
    path.write_text("---\ntitle: On disk\n---\nbody\n", encoding="utf-8")
    report = ParseReport(path=str(path), format="auto")
    [note] = iter_conversations(path, report=report, root=tmp_path, content=b"---\ntitle: Given\n---\nbody\n")
    assert note.title == "Given" and report.bytes == len(b"---\ntitle: Given\n---\nbody\n")


def test_a_text_file_is_told_by_its_name_as_path_suffix_tells_it():
    rng = random.Random(7)
    pieces = ["a", ".", "md", "MD", "txt", "markdown", "/", "json", " "]
    for _ in range(5000):
        name = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 7)))
        if str(Path(name)) != name:
            continue  # `a/`, `a/.`, `a//b`: spellings Path normalises (a trailing one names a folder)
        expected = Path(name).suffix.lower() in textfiles.TEXT_SUFFIXES
        assert textfiles.is_text_source(name) == expected, name
        assert textfiles.is_text_source(Path(name)) == expected, name
