"""Closed sessions → the live sensor → synix_build_all on a real Dagster instance → transcripts,
episodes, rollups, core, with provenance down to the posted turn ids; outbox retries and dead
letters; a batch left by a killed process."""
from __future__ import annotations

import sqlite3

import dagster as dg
import pytest
from live_helpers import post

from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.live_sensor import BATCH_TAG, SENSOR_NAME
from synix_assets.live.worker import drain
from synix_assets.pipeline.api import Pipeline


def _current(paths, layer):
    store = paths.open_store()
    try:
        return store.get_many([r.artifact_id for r in store.current_index(layer).values()])
    finally:
        store.close()


def _partition(paths, session: str) -> str:
    """The session's readable Dagster partition key, as the store named it."""
    store = paths.open_store()
    try:
        return store.partition_names()[session]
    finally:
        store.close()


def _episodes_ever_built(paths) -> dict[str, int]:
    db = sqlite3.connect(paths.store)
    try:
        return dict(db.execute("SELECT group_key, COUNT(*) FROM artifacts WHERE layer = 'episodes' "
                               "GROUP BY group_key").fetchall())
    finally:
        db.close()


def test_closed_sessions_build_to_core_through_dagster_with_provenance_down_to_turn_ids(live_project, inbox):
    post(inbox, "kayak", "I plan a kayak trip to Norway in July", "Pack a drysuit for the fjords")
    post(inbox, "tax", "My tax return is due on the 15th", "Gather the receipts first", day="2025-07-02")
    post(inbox, "still-open", "This one is not finished")
    inbox.close_session("kayak")
    inbox.close_session("tax")
    report = drain(live_project)
    assert [b["success"] for b in report["builds"]] == [True]
    status = inbox.status()
    assert (status["built"], status["pending"], status["building"], status["open_sessions"]) == (2, 0, 0, 1)
    transcripts = {a.group_key: a for a in _current(live_project, "transcripts")}
    assert set(transcripts) == {"kayak", "tax"}
    assert transcripts["kayak"].metadata["meta.custom.turn_ids"] == ["kayak-1", "kayak-2"]
    assert transcripts["kayak"].metadata["meta.source.type"] == "live-session"
    assert transcripts["tax"].metadata["meta.time.period"] == "2025-07"
    assert {a.group_key for a in _current(live_project, "episodes")} == {"kayak", "tax"}
    assert {a.group_key for a in _current(live_project, "monthly")} == {"2025-06", "2025-07"}
    core = _current(live_project, "core")
    assert len(core) == 1
    store = live_project.open_store()
    try:
        leaves = store.leaves(core[0].artifact_id, max_count=10)
        assert sorted(l.metadata["meta.custom.turn_ids"][0] for l in leaves) == ["kayak-1", "tax-1"]
        episode = next(a for a in _current(live_project, "episodes") if a.group_key == "kayak")
        audit = store.audit(episode.artifact_id)
        assert audit is not None and audit["provider"] == "fake"
    finally:
        store.close()
    instance = dagster_instance(live_project)
    assert {_partition(live_project, "kayak"), _partition(live_project, "tax")} <= \
        set(instance.get_dynamic_partitions("conversations"))
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"synix/trigger": "live_sensor"}))
    whole = [r for r in runs if r.job_name == "synix_build_all"]
    assert len(whole) == 1 and whole[0].tags[BATCH_TAG]
    # the layer runs it launched carry the same trigger (the UI shows why they ran)
    assert {r.job_name for r in runs} >= {"synix_build_transcripts", "synix_build_episodes"}
    # nothing new: the next drain requests nothing
    assert drain(live_project)["builds"] == []


def test_a_turn_for_a_closed_session_reopens_it_and_the_new_version_replaces_the_transcript(live_project, inbox):
    post(inbox, "trip", "Booked the ferry to Bergen")
    inbox.close_session("trip")
    drain(live_project)
    again = post(inbox, "trip", "Also booked a cabin for two nights")
    assert again["version"] == 2 and again["turn_ids"] == ["trip-2"]
    inbox.close_session("trip")
    drain(live_project)
    [transcript] = _current(live_project, "transcripts")
    assert transcript.metadata["meta.custom.turn_ids"] == ["trip-1", "trip-2"]
    assert "cabin" in transcript.content and "ferry" in transcript.content
    assert [r["state"] for r in inbox.outbox_rows()] == ["built", "built"]
    assert _episodes_ever_built(live_project) == {"trip": 2}  # one per version, never more


def test_the_sensor_hands_a_batch_once_and_requests_nothing_while_it_builds(live_project, inbox):
    post(inbox, "a", "first")
    inbox.close_session("a")
    instance = dagster_instance(live_project)
    defs = build_defs(live_project.root)
    sensor = defs.resolve_sensor_def(SENSOR_NAME)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING

    def tick():
        with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
            return sensor(ctx)
    first = tick()
    assert len(first.run_requests) == 1 and first.run_requests[0].tags["synix/trigger"] == "live_sensor"
    assert instance.get_dynamic_partitions("conversations") == ["2025-06-01-first"]  # date, first words
    post(inbox, "b", "second")
    inbox.close_session("b")
    assert tick().run_requests == []  # a batch is building: the guard holds "b" back
    assert inbox.status()["building"] == 1 and inbox.status()["pending"] == 1


def test_llm_down_sessions_wait_with_backoff_then_build_when_the_model_returns(live_project, inbox, monkeypatch):
    monkeypatch.setenv("SYNIX_LIVE_BACKOFF_S", "3600")
    monkeypatch.setenv("SYNIX_FAKE_FAILURE_RATE", "1.0")
    post(inbox, "s1", "the model is down today")
    inbox.close_session("s1")
    report = drain(live_project)
    assert [b["success"] for b in report["builds"]] == [False]
    status = inbox.status()
    assert status["pending"] == 1 and status["max_attempts_so_far"] == 1
    assert "episodes/s1" in status["last_error"] and status["next_attempt_at"]
    assert drain(live_project)["builds"] == []  # waiting out the backoff: no new attempt
    # the transcript was kept; only the episode failed
    assert [a.group_key for a in _current(live_project, "transcripts")] == ["s1"]
    monkeypatch.setenv("SYNIX_FAKE_FAILURE_RATE", "0")
    monkeypatch.setenv("SYNIX_LIVE_BACKOFF_S", "0")
    inbox._open_conn().execute("UPDATE outbox SET next_attempt_at = 0")  # the backoff has passed
    assert [b["success"] for b in drain(live_project)["builds"]] == [True]
    assert inbox.status()["built"] == 1
    assert _episodes_ever_built(live_project) == {"s1": 1}


def test_after_the_last_attempt_a_session_is_dead_lettered_with_the_reason(live_project, inbox, monkeypatch):
    monkeypatch.setenv("SYNIX_LIVE_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("SYNIX_FAKE_FAILURE_RATE", "1.0")
    inbox.max_attempts = 2
    post(inbox, "doomed", "this will not build")
    inbox.close_session("doomed")
    report = drain(live_project)  # backoff 0: both attempts in one drain
    assert [b["success"] for b in report["builds"]] == [False, False]
    status = inbox.status()
    assert status["dead"] == 1 and status["pending"] == 0
    assert status["dead_letters"][0]["reason"].endswith("(after 2 attempts)")
    assert "episodes/doomed" in status["dead_letters"][0]["reason"]


def test_a_permanent_llm_error_is_dead_lettered_at_once_without_a_retry(live_project, inbox, monkeypatch):
    monkeypatch.setenv("SYNIX_LIVE_MAX_ATTEMPTS", "5")
    inbox.max_attempts = 5
    post(inbox, "rejected", "this turn makes the model answer 400: SYNIX_FAIL_400")
    inbox.close_session("rejected")
    report = drain(live_project)  # backoff 0: a retry would happen within this drain
    assert [b["success"] for b in report["builds"]] == [False]
    status = inbox.status()
    assert status["dead"] == 1 and status["pending"] == 0
    letter = status["dead_letters"][0]
    assert letter["attempts"] == 1 and letter["reason"].endswith("(permanent error, not retried)")
    assert "status 400" in letter["reason"]


def test_a_batch_left_building_by_a_killed_process_is_retried_and_built_once(live_project, inbox):
    post(inbox, "k", "interrupted build")
    inbox.close_session("k")
    batch, _ = inbox.claim()  # claimed, then the process died before its run started
    report = drain(live_project)
    assert [b["success"] for b in report["builds"]] == [True]
    assert report["builds"][0]["batch"] != batch
    assert inbox.status()["built"] == 1 and _episodes_ever_built(live_project) == {"k": 1}


def test_a_live_source_survives_the_toml_round_trip(tmp_path):
    p = Pipeline("x", base_dir=tmp_path)
    p.source("live", kind="live")
    p.merge("transcripts", from_=["live"])
    back = Pipeline.from_toml(p.to_toml(), base_dir=tmp_path)
    assert back.sources["live"].kind == "live" and back.sources["live"].path == p.sources["live"].path
