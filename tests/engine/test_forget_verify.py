"""The raw-byte check behind `forget`'s verification: finds forgotten lines as written and as
JSON escapes them, and artifact ids by their shape, across read-block boundaries, without ever
following a link."""
from __future__ import annotations

import json

from synix_assets.forget import verify as forget_verify


def test_leftovers_finds_text_raw_and_json_escaped_and_ids_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(forget_verify, "_READ_BLOCK", 64)
    line = 'He said "Zqxjarvelmonk" — twice, in naïve quotes'
    (tmp_path / "raw.txt").write_text("x" * 50 + line + "y" * 50, encoding="utf-8")
    (tmp_path / "event.json").write_text(json.dumps({"preview": line}), encoding="utf-8")
    (tmp_path / "ids.db").write_bytes(b"\0" * 60 + b'"episodes-0123456789abcdef"' + b"\0" * 60)
    (tmp_path / "clean.txt").write_text("episodes-0123456789abcdee and other text")
    found = forget_verify.leftovers(sorted(tmp_path.iterdir()), [line], ["episodes-0123456789abcdef"])
    assert found == {str(tmp_path / "raw.txt"): {"forgotten text"},
                     str(tmp_path / "event.json"): {"forgotten text"},
                     str(tmp_path / "ids.db"): {"a forgotten artifact id"}}


def test_walk_lists_regular_files_and_never_follows_links(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not ours")
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "a.txt").write_text("a")
    (project / "linked-dir").symlink_to(outside, target_is_directory=True)
    (project / "linked-file.txt").symlink_to(outside / "secret.txt")
    assert forget_verify.walk(project) == [project / "sub" / "a.txt"]


def test_the_check_runs_in_a_child_process_with_the_same_answer(tmp_path):
    """Raw reads happen in a child: closing a descriptor would drop this process's SQLite locks."""
    import sqlite3

    (tmp_path / "a.txt").write_text("the line Zqxjarvelmonk was here")
    sqlite3.connect(str(tmp_path / "x.db")).execute("CREATE TABLE t (x)").connection.close()
    payload = {"files": [str(tmp_path / "a.txt")], "texts": ["line Zqxjarvelmonk was"], "ids": []}
    assert forget_verify.in_child("leftovers", payload) == {str(tmp_path / "a.txt"): ["forgotten text"]}
    assert forget_verify.in_child("sqlite-files", {"folder": str(tmp_path)}) == [str(tmp_path / "x.db")]
