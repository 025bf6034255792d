"""One damaged conversation costs that conversation only (issue 27): a NaN or Infinity date, a
lone surrogate escape (in a file that is valid UTF-8), nesting 10,000 levels deep, or one deep
line of a JSONL export is skipped with one line naming file, conversation id and the real
cause, and every other conversation of the file builds. A conversation that was built before
and turns damaged stays built; it is not retired as if deleted."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synix_assets.app.run import run_build
from synix_assets.parsers.detect import parse_file
from synix_resources.store.artifact_store import ArtifactStore

DEPTH = 10_000
DEEP_LIST = "[" * DEPTH + "]" * DEPTH
DEEP_DICT = '{"a": ' * DEPTH + "1" + "}" * DEPTH
SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"


def chatgpt(cid: str, *, title: str = '"Garden plans"', create_time: str = "1700000000",
            text: str = '"we talked about planting walnut trees"', parts: str | None = None,
            message_time: str = "1700000100") -> str:
    """One ChatGPT conversation as JSON text; each argument is raw JSON (NaN allowed)."""
    node = ('{"id": "a", "parent": null, "children": [], "message": {"id": "a", '
            f'"author": {{"role": "user"}}, "create_time": {message_time}, '
            f'"content": {{"content_type": "text", "parts": {parts or f"[{text}]"}}}}}}}')
    return (f'{{"id": "{cid}", "title": {title}, "create_time": {create_time}, '
            f'"mapping": {{"a": {node}}}, "current_node": "a"}}')


def claude(cid: str, *, name: str = '"Kettle repair"', created: str = '"2024-01-01T00:00:00Z"',
           text: str = '"the kettle switch is broken"') -> str:
    return (f'{{"uuid": "{cid}", "name": {name}, "created_at": {created}, "chat_messages": ['
            f'{{"uuid": "m1", "sender": "human", "text": {text}, '
            f'"created_at": "2024-01-01T00:00:00Z"}}]}}')


def code_line(session: str, uuid: str, *, content: str = '"how do I rename a branch"',
              timestamp: str = '"2024-01-01T00:00:00Z"') -> str:
    return (f'{{"type": "user", "sessionId": "{session}", "uuid": "{uuid}", "parentUuid": null, '
            f'"timestamp": {timestamp}, "message": {{"role": "user", "content": {content}}}}}')


def _json_list(case: str, bad: str) -> str:
    return "[" + ",\n".join([chatgpt(f"{case}-good-1"), bad, chatgpt(f"{case}-good-2")]) + "]"


def _claude_list(case: str, bad: str) -> str:
    return "[" + ",\n".join([claude(f"{case}-good-1"), bad, claude(f"{case}-good-2")]) + "]"


def _jsonl(case: str, bad: str) -> str:
    return "\n".join([chatgpt(f"{case}-good-1"), bad, chatgpt(f"{case}-good-2")]) + "\n"


def _code(case: str, bad_content: str = '"hi"', bad_time: str = '"2024-01-01T00:00:01Z"') -> str:
    return "\n".join([code_line(f"{case}-good-1", "g1"),
                      code_line(f"{case}-bad", "b1", content=bad_content, timestamp=bad_time),
                      code_line(f"{case}-good-2", "g2")]) + "\n"


# case → (file name, file text, the cause the skip line must give)
CASES = {
    "chatgpt-nan-date": ("chatgpt-nan-date.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", create_time="NaN")), "create_time is NaN, not a date"),
    "chatgpt-infinity-date": ("chatgpt-infinity-date.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", create_time="Infinity")), "create_time is Infinity, not a date"),
    "chatgpt-infinite-message-date": ("chatgpt-infinite-message-date.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", message_time="-Infinity")),
        "create_time of message a is -Infinity, not a date"),
    "chatgpt-surrogate-title": ("chatgpt-surrogate-title.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", title='"Plans \\udcff"')),
        "has a lone surrogate escape \\udcff in field title"),
    "chatgpt-surrogate-text": ("chatgpt-surrogate-text.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", text='"hi \\udcff there"')),
        "has a lone surrogate escape \\udcff in field mapping.a.message.content.parts[0]"),
    "chatgpt-deep-parts": ("chatgpt-deep-parts.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", parts=f"[{DEEP_LIST}]")), "is nested more than 100 levels deep"),
    "chatgpt-deep-title": ("chatgpt-deep-title.json", lambda c: _json_list(
        c, chatgpt(f"{c}-bad", title=DEEP_DICT)), "is nested more than 100 levels deep"),
    "chatgpt-jsonl-deep-line": ("chatgpt-jsonl-deep-line.jsonl", lambda c: _jsonl(
        c, chatgpt(f"{c}-bad", parts=f"[{DEEP_LIST}]")), "is nested more than 100 levels deep"),
    "chatgpt-jsonl-nan-line": ("chatgpt-jsonl-nan-line.jsonl", lambda c: _jsonl(
        c, chatgpt(f"{c}-bad", create_time="NaN")), "create_time is NaN, not a date"),
    "claude-infinity-date": ("claude-infinity-date.json", lambda c: _claude_list(
        c, claude(f"{c}-bad", created="Infinity")), "created_at is Infinity, not a date"),
    "claude-surrogate-name": ("claude-surrogate-name.json", lambda c: _claude_list(
        c, claude(f"{c}-bad", name='"Kettle \\udcff"')),
        "has a lone surrogate escape \\udcff in field name"),
    "claude-surrogate-text": ("claude-surrogate-text.json", lambda c: _claude_list(
        c, claude(f"{c}-bad", text='"broken \\ud800 kettle"')),
        "has a lone surrogate escape \\ud800 in field chat_messages[0].text"),
    "claude-deep-name": ("claude-deep-name.json", lambda c: _claude_list(
        c, claude(f"{c}-bad", name=DEEP_DICT)), "is nested more than 100 levels deep"),
    "claude-code-deep-line": ("claude-code-deep-line.jsonl", lambda c: _code(
        c, bad_content=f"[{DEEP_LIST}]"), "line 2 is nested more than 100 levels deep"),
    "claude-code-surrogate-text": ("claude-code-surrogate-text.jsonl", lambda c: _code(
        c, bad_content='"hi \\udcff"'),
        "line 2 has a lone surrogate escape \\udcff in field message.content"),
    "claude-code-nan-timestamp": ("claude-code-nan-timestamp.jsonl", lambda c: _code(
        c, bad_time="NaN"), "timestamp of line b1 is NaN, not a date"),
}


def write_case(folder: Path, case: str) -> Path:
    name, make, _cause = CASES[case]
    path = folder / name
    path.write_text(make(case), encoding="utf-8")
    path.read_bytes().decode("utf-8")  # the file itself is valid UTF-8
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_damaged_conversation_is_skipped_with_one_line_and_the_others_parse(tmp_path, caplog, case):
    path = write_case(tmp_path, case)
    cause = CASES[case][2]
    with caplog.at_level(logging.INFO, logger="synix.parsers"):
        conversations, report = parse_file(path)
    assert [c.conversation_id for c in conversations] == [f"{case}-good-1", f"{case}-good-2"]
    assert report.skipped == [(f"{case}-bad", cause)]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == [f"{path}: skipped conversation {case}-bad: {cause}"]


def test_conversation_whose_id_cannot_be_found_is_named_by_its_position(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text("[" + ",".join([chatgpt("good-1"), '{"title": NaN, "mapping": ' + DEEP_LIST
                                    + "}", chatgpt("good-2")]) + "]")
    conversations, report = parse_file(path)
    assert [c.conversation_id for c in conversations] == ["good-1", "good-2"]
    assert report.skipped == [("#2", "is nested more than 100 levels deep")]


def test_file_whose_outline_breaks_after_a_damaged_conversation_is_still_a_bad_file(tmp_path):
    from synix_resources.errors import ExportFormatError

    path = tmp_path / "conversations.json"
    path.write_text("[" + chatgpt("a", create_time="NaN") + " " + chatgpt("b") + "]")
    with pytest.raises(ExportFormatError, match=r"is not valid JSON \(a ',' is missing between "
                                                r"two entries \(near byte [0-9,]+\)\)"):
        parse_file(path)


def _transcript_ids(paths) -> list[str]:
    store = ArtifactStore(paths.store)
    try:
        return sorted(a.metadata["meta.chat.conversation_id"] for a in store.list_layer("transcripts"))
    finally:
        store.close()


def test_build_skips_each_damaged_conversation_and_builds_every_other_one(small_project):
    paths = small_project(1)
    exports = paths.root / "exports"
    for case in CASES:
        write_case(exports, case)
    report = run_build(paths)
    assert not [s for s in report.skipped_inputs if "error" in s]  # no file was refused
    skipped = {(Path(s["file"]).name, s["conversation_id"]): s["reason"]
               for s in report.skipped_inputs}
    assert skipped == {(name, f"{case}-bad"): cause for case, (name, _, cause) in CASES.items()}
    good = sorted(f"{case}-good-{i}" for case in CASES for i in (1, 2))
    assert _transcript_ids(paths) == sorted(["conv-0", *good])
    store = ArtifactStore(paths.store)
    try:
        assert len(store.current_index("episodes")) == 1 + len(good)
    finally:
        store.close()


@pytest.mark.slow
def test_cli_run_prints_one_line_per_damaged_conversation_and_exits_0(small_project):
    paths = small_project(1)
    cases = ["chatgpt-nan-date", "chatgpt-surrogate-text", "chatgpt-jsonl-deep-line",
             "claude-deep-name", "claude-code-deep-line"]
    for case in cases:
        write_case(paths.root / "exports", case)
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "NO_COLOR": "1", "COLUMNS": "300"}
    env.pop("SYNIX_DEBUG", None)
    proc = subprocess.run([SYNIX, "-p", str(paths.root), "run"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr  # like any skipped conversation: the build completed
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    for case in cases:
        name, _, cause = CASES[case]
        lines = [line for line in proc.stderr.splitlines() if name in line]
        assert lines == [f"skipped conversation {case}-bad in {paths.root / 'exports' / name}: "
                         f"{cause}"], proc.stderr
    assert _transcript_ids(paths) == sorted(["conv-0", *(f"{c}-good-{i}" for c in cases
                                                           for i in (1, 2))])


def test_built_conversation_that_turns_damaged_stays_built_and_a_deleted_one_is_retired(
        small_project):
    paths = small_project(0)
    export = paths.root / "exports" / "conversations.json"
    export.write_text("[" + ",".join(chatgpt(c) for c in ("keep", "turns-bad", "deleted")) + "]")
    run_build(paths)
    store = ArtifactStore(paths.store)
    try:
        before = {k: store.current_index(k) for k in ("transcripts", "episodes")}
    finally:
        store.close()
    assert len(before["transcripts"]) == 3
    # a new download: "turns-bad" now has a NaN date, "deleted" is gone
    export.write_text("[" + ",".join([chatgpt("keep"), chatgpt("turns-bad", create_time="NaN")]) + "]")
    report = run_build(paths)
    assert [(s["conversation_id"], s["reason"]) for s in report.skipped_inputs] == [
        ("turns-bad", "create_time is NaN, not a date")]
    assert _transcript_ids(paths) == ["keep", "turns-bad"]
    store = ArtifactStore(paths.store)
    try:
        for layer in ("transcripts", "episodes"):
            after = store.current_index(layer)
            assert sorted(after) == ["keep", "turns-bad"], layer  # "deleted" retired, all down
            assert after["turns-bad"].artifact_id == before[layer]["turns-bad"].artifact_id
    finally:
        store.close()
