"""Agent-written memories (issue 32, Syke's tools): supersession history and `as_of` on a fact
that changes, the log replayed by builds (same records, second build a no-op), a kill between
append and apply, forget taking every derived memory and link, and one-line refusals."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from agent_memory_helpers import agent_records, built_project, fake_model_env, transcripts

from synix_resources.errors import (InvalidMemoryId, InvalidTime, MemoryNotFound,
                                    MemoryOpRefused)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return built_project(tmp_path_factory.mktemp("agent_memory"))


@pytest.fixture
def berlin(project):
    """"Alex lives in Berlin" (2024-01-10) superseded by "moved to Lisbon" (2025-02-01)."""
    from synix_assets.engine.agent_memory import MemoryWriter

    first, second = transcripts(project)[:2]
    writer = MemoryWriter(project)
    old = writer.create_memory("Alex lives in Berlin, in a flat in Kreuzberg",
                               evidence=[first.artifact_id], valid_from="2024-01-10")
    new = writer.supersede_memory(old["memory_id"], "Alex moved to Lisbon and rents an apartment",
                                  reason="moved in February", evidence=[second.artifact_id],
                                  valid_from="2025-02-01")
    return {"old": old["memory_id"], "new": new["new_id"], "writer": writer,
            "evidence": (first.artifact_id, second.artifact_id), "answers": (old, new)}


def _service(paths):
    from synix_assets.app.memory import MemoryService

    return MemoryService(paths)


def test_a_superseded_fact_is_returned_inside_its_validity_window_and_not_after(project, berlin):
    svc = _service(project)
    try:
        then = svc.search("where does Alex live Berlin Lisbon", as_of="2024-06-01")
        now = svc.search("where does Alex live Berlin Lisbon", as_of="2025-03-01")
        today = svc.search("where does Alex live Berlin Lisbon")
        at_old = svc.record(berlin["old"], as_of="2024-06-01")
        with pytest.raises(MemoryNotFound, match="held nothing at 2025-03-01"):
            svc.record(berlin["old"], as_of="2025-03-01")
    finally:
        svc.close()
    ids = lambda answer: [m["memory_id"] for m in answer["memories"]]  # noqa: E731
    assert berlin["old"] in ids(then) and berlin["new"] not in ids(then)
    assert berlin["new"] in ids(now) and berlin["old"] not in ids(now)
    # today's search ranks the memories held now among its hits (titled by their memory id)
    held = [h["title"].split()[-1] for h in today["hits"] if h["layer"] == "agent_memories"]
    assert berlin["new"] in held and berlin["old"] not in held and "memories" not in today
    assert then["as_of"] == "2024-06-01T00:00:00Z"
    assert at_old["content"].startswith("Alex lives in Berlin") and at_old["state"] == "active"
    assert at_old["state_now"] == "superseded" and at_old["superseded_by"] == berlin["new"]
    assert all(a["applied"] for a in berlin["answers"])


def test_history_walks_the_supersession_chain_from_either_end(project, berlin):
    berlin["writer"].update_memory(berlin["new"], "Alex moved to Lisbon (Alfama) and rents an apartment",
                                   valid_from="2025-02-10")
    svc = _service(project)
    try:
        from_old = svc.memory_history(berlin["old"])
        from_new = svc.memory_history(berlin["new"])
    finally:
        svc.close()
    assert from_old["chain"] == from_new["chain"]
    old, new = from_old["chain"]
    assert (old["memory_id"], new["memory_id"]) == (berlin["old"], berlin["new"])
    assert old["state"] == "superseded" and old["superseded_by"] == berlin["new"]
    assert old["valid_until"] == new["versions"][0]["valid_from"] == "2025-02-01T00:00:00Z"
    assert new["valid_from"] == "2025-02-10T00:00:00Z"  # the version held now
    assert new["supersedes"] == berlin["old"] and new["state"] == "active" and new["version"] == 2
    assert [v["valid_until"] for v in new["versions"]] == ["2025-02-10T00:00:00Z", None]
    assert from_old["current"] == berlin["new"]


def test_memory_records_carry_provenance_to_the_evidence_they_cite(project, berlin):
    records = agent_records(project)
    _, _, meta, parents = records[("agent_memories", berlin["new"])]
    old_record = records[("agent_memories", berlin["old"])][0]
    assert berlin["evidence"][1] in parents and old_record in parents
    assert meta["evidence"] == [berlin["evidence"][1]]
    store = project.open_store(read_only=True)
    try:
        below = {a.artifact_id for a in store.descendants(berlin["evidence"][0])}
    finally:
        store.close()
    assert {old_record, records[("agent_memories", berlin["new"])][0]} <= below


def test_bad_writes_are_refused_in_one_line_before_the_log_changes(project, berlin):
    from synix_assets.engine.agent_memory import MemoryWriter
    from synix_resources.agent_memory.log import MemoryLog

    writer = MemoryWriter(project)
    log = MemoryLog(project.memory_log)
    try:
        before = len(log.ops())
        cases = [
            (lambda: writer.update_memory("mem-../../etc", "x"), InvalidMemoryId, "memory_id"),
            (lambda: writer.update_memory("mem-0000000000000000", "x"), MemoryNotFound, "no memory"),
            (lambda: writer.update_memory(berlin["old"], "x"), MemoryOpRefused, "was superseded"),
            (lambda: writer.create_memory("   "), MemoryOpRefused, "content is empty"),
            (lambda: writer.create_memory("x", evidence=["episodes-ffffffffffffffff"]), MemoryOpRefused,
             "names no record"),
            (lambda: writer.create_memory("x", evidence="episodes-1"), MemoryOpRefused, "list of event or record ids"),
            (lambda: writer.create_memory("x", valid_from="last tuesday"), InvalidTime, "valid_from"),
            (lambda: writer.supersede_memory(berlin["new"], "x", reason="r", valid_from="2020-01-01"),
             MemoryOpRefused, "before"),
            (lambda: writer.create_link(berlin["new"], berlin["new"], "self"), MemoryOpRefused, "two memories"),
        ]
        for call, error, words in cases:
            with pytest.raises(error) as caught:
                call()
            line = caught.value.one_line()
            assert words in line and "\n" not in line, line
        assert len(log.ops()) == before
    finally:
        log.close()


def test_a_build_replays_the_log_into_the_same_records_and_a_second_build_is_a_no_op(project, berlin):
    from synix_assets.app.run import run_build

    other = berlin["writer"].create_memory("Alex is learning Portuguese", valid_from="2025-02-15")
    berlin["writer"].create_link(berlin["new"], other["memory_id"], "learns the language of the new city")
    made = agent_records(project)
    store = project.open_store()
    try:  # a store that lost the records (as if the process died before applying the ops)
        store.delete(a for a, *_ in made.values())
    finally:
        store.close()
    assert agent_records(project) == {}
    with fake_model_env(project.root):
        first = run_build(project)
        second = run_build(project)
    assert agent_records(project) == made
    assert first.memories["written"] == len(made) and first.to_json()["memories"]["written"] == len(made)
    assert second.memories == {"written": 0, "unchanged": len(made), "retired": 0, "missing_evidence": []}


KILLED_WRITER = """
import os, signal, sys
from synix_assets.engine.agent_memory import writes
from synix_assets.project import ProjectPaths
# die the moment the op is on disk, before any record is made of it
writes.apply_log = lambda paths, **_: os.kill(os.getpid(), signal.SIGKILL)
writes.MemoryWriter(ProjectPaths(sys.argv[1])).create_memory("Alex adopted a cat named Miso")
"""


def test_a_writer_killed_between_append_and_build_loses_nothing(project):
    from synix_assets.app.run import run_build

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(project.root)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not [k for k, v in agent_records(project).items() if "Miso" in v[1]]
    with fake_model_env(project.root):
        report = run_build(project)
    assert report.memories["written"] >= 1
    assert [k for k, v in agent_records(project).items() if "Miso" in v[1]]


def test_forget_takes_every_memory_and_link_made_from_the_conversation(tmp_path):
    from synix_assets.engine.agent_memory import MemoryWriter
    from synix_assets.app.forget import forget
    from synix_resources.agent_memory.log import MemoryLog

    paths = built_project(tmp_path)
    doomed_conv, kept_conv = transcripts(paths)[:2]
    writer = MemoryWriter(paths)
    gone = writer.create_memory("Alex trains for a marathon", evidence=[doomed_conv.artifact_id])
    after = writer.supersede_memory(gone["memory_id"], "Alex trains for a half marathon",
                                    reason="smaller goal")
    kept = writer.create_memory("Alex likes kayaking", evidence=[kept_conv.artifact_id])
    link = writer.create_link(kept["memory_id"], after["new_id"], "both outdoors")
    assert len(agent_records(paths)) == 4
    with fake_model_env(tmp_path):
        report = forget(paths, doomed_conv.metadata["meta.chat.conversation_id"])
    left = agent_records(paths)
    assert set(left) == {("agent_memories", kept["memory_id"])}
    forgotten = {a["group_key"] for a in report.to_json()["artifacts"]}
    assert {gone["memory_id"], after["new_id"], link["link_id"]} <= forgotten
    log = MemoryLog(paths.memory_log)
    try:
        ops = log.ops()
    finally:
        log.close()
    assert [o["op"] for o in ops] == ["create"] and ops[0]["memory_id"] == kept["memory_id"]
    assert not any(doomed_conv.artifact_id in json.dumps(o) for o in ops)


def test_the_cli_and_the_python_api_write_and_read_the_same_memories(project):
    from click.testing import CliRunner

    import synix
    from synix_assets.cli.main import main

    def cli(*args):
        result = CliRunner().invoke(main, ["memory", *args, "-p", str(project.root)],
                                    catch_exceptions=False)
        return result

    evidence = transcripts(project)[0].artifact_id
    made = cli("create_memory", "Robin swims every Tuesday", "--evidence", evidence,
               "--valid-from", "2024-03-01", "--json")
    assert made.exit_code == 0, made.output
    robin = json.loads(made.output)["memory_id"]
    pipeline = synix.Pipeline.load(project.root)
    moved = pipeline.supersede_memory(robin, "Robin swims every Thursday", "the pool changed its hours",
                                      valid_from="2024-09-01")
    shown = json.loads(cli("get_memory", robin, "--as-of", "2024-05-01", "--json").output)
    assert shown == pipeline.get_memory(robin, as_of="2024-05-01")
    assert shown["content"] == "Robin swims every Tuesday"
    assert json.loads(cli("get_memory_history", moved["new_id"], "--json").output)["chain"] == \
        pipeline.get_memory_history(robin)["chain"]
    text = cli("get_memory_history", robin).output
    assert f"{robin} v1 (superseded, 2024-03-01T00:00:00Z → 2024-09-01T00:00:00Z)" in text
    found = pipeline.search("Robin swims", as_of="2024-05-01")
    assert [m["memory_id"] for m in found.memories] == [robin]
    assert found.to_json()["as_of"] == "2024-05-01T00:00:00Z"
    searched = CliRunner().invoke(main, ["search", "Robin swims", "--as-of", "2024-10-01", "--json",
                                         "-p", str(project.root)], catch_exceptions=False)
    assert [m["memory_id"] for m in json.loads(searched.output)["memories"]] == [moved["new_id"]]
    refused = cli("update_memory", robin, "Robin stopped swimming")
    assert refused.exit_code == 1 and "was superseded" in refused.output
    assert "Traceback" not in refused.output and len(refused.output.strip().splitlines()) == 1


def test_a_memory_written_without_a_time_holds_from_when_it_was_recorded(project):
    from synix_assets.engine.agent_memory import MemoryWriter

    writer = MemoryWriter(project)
    made = writer.create_memory("Jo bakes sourdough on Sundays")
    writer.update_memory(made["memory_id"], "Jo bakes sourdough on Saturdays")
    svc = _service(project)
    try:
        now = svc.record(made["memory_id"])
        before = svc.search("sourdough", as_of="2020-01-01")["memories"]
        current = svc.search("sourdough", as_of="2999-01-01")["memories"]
    finally:
        svc.close()
    first, second = now["versions"]
    assert first["valid_until"] == second["valid_from"] and second["valid_from"].endswith("Z")
    assert before == [] and [m["content"] for m in current] == ["Jo bakes sourdough on Saturdays"]


def test_a_branch_starts_from_mains_memories_and_writes_without_changing_main(project):
    from synix_assets.engine.agent_memory import MemoryWriter
    from synix_assets.app.branches import create_branch

    on_main = MemoryWriter(project).create_memory("Kim plays the cello")
    create_branch(project, "syke")
    branch = project.on_branch("syke")
    MemoryWriter(branch).update_memory(on_main["memory_id"], "Kim plays the cello and the viola")
    svc_main, svc_branch = _service(project), _service(branch)
    try:
        assert svc_main.record(on_main["memory_id"])["content"] == "Kim plays the cello"
        assert svc_branch.record(on_main["memory_id"])["content"] == "Kim plays the cello and the viola"
        assert svc_branch.memory_history(on_main["memory_id"])["current"] == on_main["memory_id"]
    finally:
        svc_main.close()
        svc_branch.close()


def test_a_written_memory_is_found_by_the_default_search_of_every_door_ranked_with_the_rest(project):
    """Written between builds, it is searchable at once (the index gets it under the write's
    lock); a build keeps it indexed; deactivated, it is gone from every door."""
    import synix
    from click.testing import CliRunner

    from synix_assets.app.query import search_view
    from synix_assets.cli.main import main
    from synix_assets.engine.agent_memory import MemoryWriter
    from synix_assets.serve.tools import memory_tools

    evidence = transcripts(project)[0].artifact_id
    writer = MemoryWriter(project)
    made = writer.create_memory("Quillon the cat eats salmon pate on Sundays", evidence=[evidence])
    mem = made["memory_id"]

    def doors() -> dict[str, list[str]]:
        svc = _service(project)
        try:
            mcp = {t.__name__: t for t in memory_tools(svc)}["search_memories"]("quillon salmon")
        finally:
            svc.close()
        cli = CliRunner().invoke(main, ["-p", str(project.root), "search", "quillon salmon", "--json"],
                                 catch_exceptions=False)
        answers = {"mcp": mcp, "cli": json.loads(cli.output),
                   "python": synix.open(str(project.root)).search("quillon salmon").to_json(),
                   "view": search_view(project, "quillon salmon", trees=False)}
        return {door: [h["title"] for h in a["hits"] if h["layer"] == "agent_memories"]
                for door, a in answers.items()}

    for door, titles in doors().items():
        assert titles == [f"agent_memories {mem}"], door
    hit = search_view(project, "quillon salmon", trees=False)["hits"][0]
    assert hit["layer"] == "agent_memories" and "[Quillon]" in hit["snippet"]
    assert hit["covers"]["conversations"] == 1  # its evidence's conversation
    run = subprocess.run([sys.executable, "-m", "synix_assets.cli", "-p", str(project.root), "run"],
                         capture_output=True, text=True, timeout=600, env={**os.environ})
    assert run.returncode == 0, run.stderr
    assert all(t == [f"agent_memories {mem}"] for t in doors().values())
    writer.deactivate_memory(mem, "the cat moved out")
    assert all(t == [] for t in doors().values())

