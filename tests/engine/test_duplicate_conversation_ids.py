"""One export holding two versions of one conversation id: the transcript stored is the version
the merge rule chose (its text, its date and its key together), and a rerun is a no-op."""
from __future__ import annotations

import json

import pytest

from synix_assets.app.run import run_build
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_resources.store.artifact_store import ArtifactStore

OLD_TIME, NEW_TIME = 1_700_000_000.0, 1_700_900_000.0


def _version(text: str, updated: float) -> dict:
    """A ChatGPT conversation `dup-1` whose only user message is `text`."""
    nodes = {"root": {"id": "root", "parent": None, "children": ["m1"], "message": None},
             "m1": {"id": "m1", "parent": "root", "children": [],
                    "message": {"id": "m1", "author": {"role": "user"}, "create_time": updated,
                                "content": {"content_type": "text", "parts": [text]}}}}
    return {"id": "dup-1", "conversation_id": "dup-1", "title": "Garden plans",
            "create_time": OLD_TIME, "update_time": updated, "mapping": nodes,
            "current_node": "m1"}


def _other() -> dict:
    conv = _version("an unrelated talk about kettles", OLD_TIME)
    return {**conv, "id": "other-1", "conversation_id": "other-1", "title": "Kettles"}


@pytest.fixture
def project(tmp_path):
    def make(conflict: str) -> ProjectPaths:
        paths = ProjectPaths(init_project(tmp_path / conflict))
        # the older version comes first in the file, the newer one later
        (paths.root / "exports" / "conversations.json").write_text(json.dumps([
            _version("OLDTEXT we planted walnut trees", OLD_TIME), _other(),
            _version("NEWTEXT we planted pecan trees instead", NEW_TIME)]))
        pipeline = paths.pipeline_file.read_text()
        paths.pipeline_file.write_text(pipeline.replace('conflict="prefer_latest"',
                                                        f'conflict="{conflict}"'))
        return paths
    return make


def _transcripts(paths) -> list:
    store = ArtifactStore(paths.store)
    try:
        return sorted(store.list_layer("transcripts"), key=lambda a: a.content)
    finally:
        store.close()


def _dup(paths):
    return [a for a in _transcripts(paths) if a.metadata["meta.chat.conversation_id"] == "dup-1"]


@pytest.mark.parametrize("conflict, kept, dropped, updated", [
    ("prefer_latest", "NEWTEXT", "OLDTEXT", NEW_TIME),
    ("prefer_first", "OLDTEXT", "NEWTEXT", OLD_TIME),
])
def test_duplicate_id_in_one_export_stores_the_version_the_rule_chose(project, conflict, kept,
                                                                      dropped, updated):
    paths = project(conflict)
    run_build(paths, select="transcripts")
    [art] = _dup(paths)
    assert kept in art.content and dropped not in art.content
    # the stored date belongs to the stored text
    assert art.metadata["meta.time.updated_at"].startswith(
        __import__("datetime").datetime.fromtimestamp(updated, __import__("datetime").timezone.utc)
        .strftime("%Y-%m-%d"))
    again = run_build(paths, select="transcripts")
    assert again.layers["transcripts"]["built"] == 0
    assert [a.artifact_id for a in _dup(paths)] == [art.artifact_id]


def test_keep_all_stores_each_version_with_its_own_text(project):
    paths = project("keep_all")
    run_build(paths, select="transcripts")
    versions = _dup(paths)
    assert len(versions) == 2
    assert {("NEWTEXT" in a.content, "OLDTEXT" in a.content) for a in versions} == \
        {(True, False), (False, True)}
    assert run_build(paths, select="transcripts").layers["transcripts"]["built"] == 0


def test_keep_all_keeps_both_copies_of_a_byte_identical_export_file(project):
    paths = project("keep_all")
    exports = paths.root / "exports"
    (exports / "copy.json").write_bytes((exports / "conversations.json").read_bytes())
    run_build(paths, select="transcripts")
    arts = _transcripts(paths)
    by_file: dict[str, list[str]] = {}
    for a in arts:
        by_file.setdefault(a.metadata["meta.source.path"].rsplit("/", 1)[-1], []).append(
            a.metadata["meta.chat.conversation_id"])
    # every version of every conversation, once from each of the two files
    assert {f: sorted(ids) for f, ids in by_file.items()} == {
        "conversations.json": ["dup-1", "dup-1", "other-1"], "copy.json": ["dup-1", "dup-1", "other-1"]}
    assert len({a.group_key for a in arts}) == 6
    assert run_build(paths, select="transcripts").layers["transcripts"]["built"] == 0
    # the copy goes away: its three transcripts are retired, the original's stay as they were
    (exports / "copy.json").unlink()
    run_build(paths, select="transcripts")
    left = _transcripts(paths)
    assert sorted(a.artifact_id for a in left) == sorted(
        a.artifact_id for a in arts if a.metadata["meta.source.path"].endswith("conversations.json"))
