"""The synthesis loop on a schedule (design 003: every 15 minutes): the definitions carry
`synix_synthesis_schedule`, evaluated here against the project's real Dagster instance — a run
request when the ledger holds evidence no clean build has synthesised, a skip saying why when it
does not, a skip while a build is still unfinished."""
from __future__ import annotations

from datetime import datetime, timezone

import dagster as dg
import pytest

from synix_assets.app.ledger import append_events
from synix_assets.app.run import run_build
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_resources.errors import SynixError

NAME = "synix_synthesis_schedule"


def _schedule(defs) -> dg.ScheduleDefinition:
    return next(s for s in defs.schedules if s.name == NAME)


def _tick(defs, instance, minute: int):
    when = datetime(2026, 1, 5, 10, minute, tzinfo=timezone.utc)
    with dg.build_schedule_context(instance=instance, scheduled_execution_time=when) as context:
        return _schedule(defs).evaluate_tick(context)


@pytest.fixture
def instance(demo_project):
    with dagster_instance(demo_project) as inst:
        yield inst


def test_the_definitions_load_with_a_running_15_minute_schedule_of_the_whole_build(demo_project):
    defs = build_defs(demo_project.root)
    schedule = _schedule(defs)
    assert schedule.cron_schedule == "*/15 * * * *"
    assert schedule.job_name == "synix_build_all"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    assert defs.get_job_def("synix_build_all") is not None  # resolvable with the schedule in place


def test_the_schedule_builds_when_evidence_is_new_and_skips_when_none_is(demo_project, instance):
    defs = build_defs(demo_project.root)
    first = _tick(defs, instance, 0)  # the exports were never synthesised
    assert len(first.run_requests) == 1 and first.skip_message is None
    request = first.run_requests[0]
    assert request.tags["synix/trigger"] == "synthesis_schedule"
    assert int(request.tags["synix/new_events"]) > 100
    # the run it asks for, on the real instance: the whole build, which marks the ledger
    result = defs.get_job_def("synix_build_all").execute_in_process(instance=instance, tags=request.tags)
    assert result.success
    quiet = _tick(defs, instance, 15)
    assert quiet.run_requests == [] and "no new evidence since the last synthesis" in quiet.skip_message
    # an event appended through the ingest API is new evidence: the next tick builds
    append_events(demo_project, [{"source": "github", "event_type": "commit",
                                  "content": "Switched the deploy to blue-green", "timestamp": "2026-01-05"}])
    again = _tick(defs, instance, 30)
    assert len(again.run_requests) == 1 and again.run_requests[0].tags["synix/new_events"] == "1"
    assert again.run_requests[0].run_key != request.run_key


def test_a_build_still_unfinished_makes_the_tick_skip(demo_project, instance):
    defs = build_defs(demo_project.root)
    job = defs.get_job_def("synix_build_all")
    run = instance.create_run_for_job(job_def=job)  # NOT_STARTED: queued for a launcher
    skipped = _tick(defs, instance, 45)
    assert skipped.run_requests == [] and f"build run {run.run_id} is still" in skipped.skip_message


def test_a_failed_build_leaves_the_evidence_unsynthesised(demo_project, instance, monkeypatch):
    run_build(demo_project)
    append_events(demo_project, [{"source": "gmail", "event_type": "email", "content": "Lunch Tuesday"}])
    defs = build_defs(demo_project.root)
    assert len(_tick(defs, instance, 0).run_requests) == 1
    # a build that does not complete does not move the mark: the next tick asks again
    (demo_project.root / "pipeline.py").write_text("raise RuntimeError('broken on purpose')\n")
    with pytest.raises(SynixError, match="broken on purpose"):
        run_build(demo_project)
    assert len(_tick(defs, instance, 15).run_requests) == 1
