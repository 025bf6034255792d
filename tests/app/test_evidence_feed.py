"""The ledger is fed from what a project already reads (each export message, each live turn),
idempotently; every build feeds it first and a clean build marks it synthesised; forget removes
a conversation's events; `resolve_events` answers what a memory may cite."""
from __future__ import annotations

import pytest

from synix_assets.app import ledger as use_case
from synix_assets.app.forget import forget
from synix_assets.app.run import run_build
from synix_assets.sources.evidence import unsynthesised
from synix_resources.ledger.store import EvidenceLedger


@pytest.fixture
def project(demo_project, monkeypatch, tmp_path):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster-unused"))
    return demo_project


def _messages(paths) -> int:
    """Messages with text in the exports, as the parsers read them (a ChatGPT export's
    abandoned branches are not messages of the conversation)."""
    from synix_assets.parsers.detect import iter_conversations

    return sum(1 for f in sorted((paths.root / "exports").rglob("*.json"))
               for conv in iter_conversations(f) for m in conv.messages if m.text.strip())


def test_every_export_message_becomes_one_event_and_a_second_read_appends_nothing(project):
    first = use_case.sync_evidence(project)
    assert first.appended == _messages(project) > 100 and first.files_read == 2
    second = use_case.sync_evidence(project)
    assert (second.appended, second.files_read, second.files_unchanged) == (0, 0, 2)
    status = use_case.ledger_status(project)
    assert status["events"] == first.appended and set(status["sources"]) == {"chatgpt", "claude"}
    # touched (new mtime, same bytes): read again, still nothing appended — the ids are the same
    for f in (project.root / "exports").rglob("*.json"):
        f.touch()
    again = use_case.sync_evidence(project)
    assert (again.appended, again.files_read) == (0, 2)


def test_a_build_feeds_the_ledger_and_marks_it_synthesised(project):
    run_build(project)
    with EvidenceLedger(project.ledger) as ledger:
        assert ledger.count() > 100 and unsynthesised(ledger) == 0
    use_case.append_events(project, [{"source": "github", "event_type": "commit", "content": "Add retries"}])
    with EvidenceLedger(project.ledger) as ledger:
        assert unsynthesised(ledger) == 1
    run_build(project)
    with EvidenceLedger(project.ledger) as ledger:
        assert unsynthesised(ledger) == 0


def test_resolve_events_says_which_cited_ids_exist(project):
    ids = use_case.append_events(project, [
        {"source": "github", "event_type": "commit", "content": "Add retries", "external_id": "abc"},
        {"source": "gmail", "event_type": "email", "content": "Dinner Friday?"}]).to_json()["ids"]
    got = use_case.resolve_events(project, [ids[1], "ev-ffffffffffffffffffffffff"])
    assert [e.content for e in got.found] == ["Dinner Friday?"]
    assert got.missing == ["ev-ffffffffffffffffffffffff"]


def test_forget_removes_the_conversations_events_from_the_ledger(project):
    run_build(project)
    hits = use_case.search_evidence(project, "equity")
    assert hits
    target = hits[0]["conversation_id"]
    report = forget(project, target, dry_run=False)
    assert report is not None
    with EvidenceLedger(project.ledger) as ledger:
        assert all(e.conversation_id != target for e in ledger.timeline(limit=100000))
        assert ledger.count() > 0
    # the export still on disk elsewhere, or re-read: never appended again
    assert use_case.sync_evidence(project).appended == 0


def _ledger_rows(paths) -> tuple[list, dict]:
    """Every event (id, content) in order, and each export file's mark (by file name)."""
    with EvidenceLedger(paths.ledger) as ledger:
        events = [(e.id, e.content) for e in ledger.timeline(limit=100000)]
        marks = {f.name: ledger.mark(f"export:exports:{f}")
                 for f in sorted((paths.root / "exports").iterdir())}
        return events, marks


def test_a_build_with_much_to_read_feeds_the_ledger_in_a_second_process_with_the_same_events(
        project, monkeypatch, tmp_path):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.project import ProjectPaths
    from synix_resources.process import helper

    started = []
    real_start = helper.start
    monkeypatch.setattr(helper, "start", lambda module, job: started.append(module) or real_start(module, job))
    monkeypatch.setenv("SYNIX_BACKGROUND_FEED_MIN_BYTES", "0")  # fed in the build's process
    inline = ProjectPaths(init_project(tmp_path / "inline", exports=demo_exports()))
    run_build(inline)
    assert started == []
    monkeypatch.setenv("SYNIX_BACKGROUND_FEED_MIN_BYTES", "1")  # any unread byte is much
    run_build(project)
    assert started == [use_case.FEED_WORKER]
    events, marks = _ledger_rows(project)
    assert (events, marks) == _ledger_rows(inline) and len(events) > 100 and all(marks.values())
    with EvidenceLedger(project.ledger) as ledger:
        assert unsynthesised(ledger) == 0
    run_build(project)  # nothing unread: no second process
    assert started == [use_case.FEED_WORKER]


def test_a_background_feed_that_did_not_finish_leaves_the_mark_and_the_next_build_feeds_the_rest(
        project, monkeypatch, caplog):
    monkeypatch.setenv("SYNIX_BACKGROUND_FEED_MIN_BYTES", "1")
    # a helper that dies before it answers (as one killed by the OOM killer would)
    monkeypatch.setattr(use_case, "FEED_WORKER", "synix_assets.no_such_feed_worker")
    report = run_build(project)
    assert report.status == "completed"  # the memory does not wait for its evidence
    assert "the evidence ledger's feed did not finish" in caplog.text
    assert not project.ledger.exists() or use_case.ledger_status(project)["events"] == 0
    monkeypatch.undo()
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    run_build(project)
    with EvidenceLedger(project.ledger) as ledger:
        assert ledger.count() == _messages(project) and unsynthesised(ledger) == 0
