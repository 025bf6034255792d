"""What a layer holds in memory is bounded by a batch, not by the number of conversations: the
transcripts layer streams its exports (a batch of transcripts is stored before the next
conversations are parsed; a scan keeps summaries only), and a transform reads its inputs and
makes its prompts a batch at a time. Real export files and SQLite store; layers are built
directly (no Dagster), with the deterministic `fake` LLM."""
from __future__ import annotations

import json

import pytest

from synix_assets.engine import transcripts, transform
from synix_assets.engine.context import BuildContext
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_assets.sources import reader
from synix_resources.errors import ExportFormatError
from synix_resources.llm.factory import make_client


@pytest.fixture
def project(tmp_path, claude_export, conversation):
    paths = ProjectPaths(init_project(tmp_path / "mem"))
    claude_export(paths.root / "exports" / "a.json",
                  [conversation(f"a-{i}", f"Talk {i}", f"2025-01-{10 + i:02d}", f"alpha{i}") for i in range(7)])
    claude_export(paths.root / "exports" / "b.json",
                  [conversation(f"b-{i}", f"Chat {i}", f"2025-02-{10 + i:02d}", f"beta{i}") for i in range(4)])
    store = paths.open_store()
    client = make_client(provider="fake")
    yield BuildContext(paths.load_pipeline(), store, client, paths)
    client.close()
    store.close()


def _count_parsed(monkeypatch) -> list[int]:
    """A counter of the conversations the parser has handed out so far."""
    parsed = [0]
    real = reader.iter_conversations

    def counting(*args, **kwargs):
        for conv in real(*args, **kwargs):
            parsed[0] += 1
            yield conv
    monkeypatch.setattr(reader, "iter_conversations", counting)
    return parsed


def test_transcripts_are_stored_a_batch_at_a_time_while_the_export_streams(project, monkeypatch):
    ctx = project
    scan = ctx.reader.scan()
    assert len(scan.summaries) == 11
    monkeypatch.setattr(transcripts, "STORE_BATCH", 3)
    parsed = _count_parsed(monkeypatch)
    stored_when: list[tuple[int, int]] = []
    real_put_many = type(ctx.store).put_many

    def put_many(self, items):
        stored_when.append((len(items), parsed[0]))
        return real_put_many(self, items)
    monkeypatch.setattr(type(ctx.store), "put_many", put_many)

    result = transcripts.build(ctx, "transcripts", scan)

    assert [o.status for o in result.outcomes] == ["built"] * 11
    assert [o.group_key for o in result.outcomes] == sorted(o.group_key for o in result.outcomes)
    assert [n for n, _ in stored_when] == [3, 3, 3, 2]
    # each batch is stored right after its last conversation was parsed, never later
    total = 0
    for n, parsed_then in stored_when:
        total += n
        assert parsed_then == total
    assert len(ctx.store.list_layer("transcripts")) == 11


def test_a_scan_parses_each_file_once_and_a_rebuild_reads_only_the_files_it_needs(project, monkeypatch):
    ctx = project
    parsed = _count_parsed(monkeypatch)
    scan = ctx.reader.scan()
    assert parsed[0] == 11  # both files summarised, streamed
    transcripts.build(ctx, "transcripts", scan)
    assert parsed[0] == 22  # streamed again for the transcripts
    # one conversation of b.json changes: only b.json is parsed again (scan + build)
    path = ctx.paths.root / "exports" / "b.json"
    data = json.loads(path.read_text())
    data[1]["chat_messages"][0]["text"] = data[1]["chat_messages"][0]["content"][0]["text"] = "changed words"
    path.write_text(json.dumps(data))
    parsed[0] = 0
    result = transcripts.build(ctx, "transcripts", ctx.reader.scan())
    assert [o.group_key for o in result.outcomes if o.status == "built"] == ["b-1"]
    assert parsed[0] == 4 + 2  # b.json scanned (4), then streamed up to its 2nd conversation


def test_an_export_changed_between_scan_and_build_is_one_clear_error(project):
    ctx = project
    scan = ctx.reader.scan()
    path = ctx.paths.root / "exports" / "a.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data[:3]))  # a-3 … a-6 gone after the scan
    with pytest.raises(ExportFormatError, match="conversation a-3 vanished while building"):
        transcripts.build(ctx, "transcripts", scan)


def test_a_transform_reads_inputs_and_calls_the_llm_a_bounded_batch_at_a_time_earliest_first(project,
                                                                                          monkeypatch):
    ctx = project
    transcripts.build(ctx, "transcripts", ctx.reader.scan())
    monkeypatch.setattr(transform, "TRANSFORM_BATCH", 4)
    reads: list[int] = []
    real_get_many = type(ctx.store).get_many

    def get_many(self, ids, **kwargs):
        ids = list(ids)
        if not kwargs.get("outline"):
            reads.append(len(ids))
        return real_get_many(self, ids, **kwargs)
    monkeypatch.setattr(type(ctx.store), "get_many", get_many)
    asked: list[list[str]] = []
    real_complete_many = type(ctx.llm).complete_many

    def complete_many(self, requests, **kwargs):
        requests = list(requests)
        asked.append([r.label.split("/", 1)[1] for r in requests])
        return real_complete_many(self, requests, **kwargs)
    monkeypatch.setattr(type(ctx.llm), "complete_many", complete_many)

    result = transform.build(ctx, "episodes")

    assert reads == [4, 4, 3]  # inputs with their contents: one batch at a time
    assert [len(a) for a in asked] == [4, 4, 3]
    # January's seven conversations come before February's four
    assert asked[0] == ["a-0", "a-1", "a-2", "a-3"] and asked[2] == ["b-1", "b-2", "b-3"]
    assert [o.group_key for o in result.outcomes] == sorted(o.group_key for o in result.outcomes)
    assert [o.status for o in result.outcomes] == ["built"] * 11
    assert len(ctx.store.list_layer("episodes")) == 11
