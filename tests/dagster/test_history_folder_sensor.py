"""The export sensor on a tool history folder (`synix init --from ~/.codex/sessions`): a session
still being written is picked up when it settles, rebuilt when it grows, never half-read, and
launches exactly one build per settle."""
from __future__ import annotations

import json
import os
import time

import dagster as dg

from synix_assets.app.init import create_project
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.project import ProjectPaths
from synix_assets.sources.reader import SourceReader
from synix_resources.store.artifact_store import ArtifactStore

SID = "019b7f94-51b4-7593-922e-ba12b5b73b52"


def _record(kind: str, payload: dict, second: int) -> bytes:
    stamp = f"2026-01-02T16:40:{second:02d}.000Z"
    return (json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n").encode()


def _message(role: str, text: str, second: int) -> bytes:
    kind = "input_text" if role == "user" else "output_text"
    return _record("response_item", {"type": "message", "role": role,
                                     "content": [{"type": kind, "text": text}]}, second)


def _settle(path) -> None:
    os.utime(path, (time.time() - 60, time.time() - 60))


def _tick(defs, instance, cursor):
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources,
                                 definitions=defs) as ctx:
        return defs.sensors[0](ctx)


def _messages(root) -> list[int]:
    with ArtifactStore(root / ".synix" / "scan.db") as store:
        scan = SourceReader(load_pipeline(root / "pipeline.py"), store).scan()
    assert scan.failed_files == []
    return [s.message_count for s in scan.summaries]


def test_sensor_builds_a_growing_codex_session_once_per_settle_and_never_half_read(tmp_path):
    sessions = tmp_path / "codex-home" / "sessions"
    day = sessions / "2026" / "01" / "02"
    day.mkdir(parents=True)
    rollout = day / f"rollout-2026-01-02T18-39-45-{SID}.jsonl"
    meta = _record("session_meta", {"id": SID, "timestamp": "2026-01-02T16:39:45Z", "cwd": "/w"}, 0)
    rollout.write_bytes(meta + _message("user", "plan the release", 1))
    _settle(rollout)
    root, _ = create_project(tmp_path / "mem", exports=[str(sessions)])
    paths = ProjectPaths(root)
    instance = dagster_instance(paths)
    defs = build_defs(root)

    first = _tick(defs, instance, None)
    # the session's partition is named by its date and first request
    assert len(first.run_requests) == 1 and \
        instance.get_dynamic_partitions("conversations") == ["2026-01-02-plan-the-release"]
    assert _tick(defs, instance, first.cursor).run_requests == []  # nothing new: no build

    # the agent starts writing its answer: half a line, fresh mtime
    answer = _message("assistant", "Here is the plan: tag, build, publish.", 5)
    with rollout.open("ab") as fh:
        fh.write(answer[:30])
    writing = _tick(defs, instance, first.cursor)
    assert writing.run_requests == [] and json.loads(writing.cursor)[str(rollout)]["sha"] is None
    # same size and mtime on the next tick, but the last line is still cut: still not read
    paused = _tick(defs, instance, writing.cursor)
    assert paused.run_requests == [] and json.loads(paused.cursor)[str(rollout)]["sha"] is None

    with rollout.open("ab") as fh:
        fh.write(answer[30:])
    _settle(rollout)
    grown = _tick(defs, instance, paused.cursor)
    assert len(grown.run_requests) == 1  # exactly one build for the settled growth
    assert grown.run_requests[0].run_key != first.run_requests[0].run_key
    assert _messages(root) == [2]  # the rebuilt session holds the answer
    assert _tick(defs, instance, grown.cursor).run_requests == []
