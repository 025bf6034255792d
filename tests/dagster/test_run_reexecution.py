"""Every run Synix creates is a run Dagster's UI can list on its job page and re-execute with the
webserver's own mutation (`launchRunReexecution`, as the UI's "Re-execute" buttons call it): the
layer and projections runs of `synix run`, the `synix_build_all` run the export sensor launches
and the runs that build launches. One real `dagster dev` serves the module, through the
scenarios in order (a failed `synix run`, the sensor's first build, a fix, re-executions)."""
from __future__ import annotations

import json

import pytest

from tests.conftest import _conversation, _make_claude_export
from tests.dagster.live import DagsterDev, built_demo_project, plan_stale, screenshot_page, synix, wait_until
from tests.support.screenshots import shot_path

WAIT_S = 180
REPO_LABEL = "__repository__@synix"  # the `.dagster/repository` tag the job page filters by
RUNS = """{ runsOrError { ... on Runs { results { runId jobName status tags { key value } } } } }"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    root = built_demo_project(tmp_path_factory, "reexec")
    poison = root / "exports" / "poison.json"
    _make_claude_export(poison, [_conversation("bad-1", "Tomato blight", "2025-03-05",
                                               "SYNIX_FAIL_400 tomato blight")])
    failed = synix(root, "run", "--json")
    assert failed.returncode != 0  # the poisoned conversation's episode failed
    dev = DagsterDev(root).wait_serving()
    try:
        # the sensor's first tick builds (every export is new to its cursor): wait for that
        # build and the runs it launched, then stop the sensor so the fix below launches nothing
        _wait(lambda: any(r["jobName"] == "synix_build_all" for r in _runs(dev))
              and dev.active_runs() == 0, "the sensor's first build ended", dev)
        _stop_sensor(dev)
        yield root, dev
    finally:
        dev.stop()


def _wait(predicate, what: str, dev: DagsterDev):
    wait_until(predicate, what, dev, WAIT_S)


def _runs(dev: DagsterDev) -> list[dict]:
    runs = dev.gql(RUNS)["runsOrError"]["results"]
    for r in runs:
        r["tags"] = {t["key"]: t["value"] for t in r["tags"]}
    return runs


def _stop_sensor(dev: DagsterDev) -> None:
    sensor = dev.gql("""{ sensorOrError(sensorSelector: {repositoryLocationName: "synix",
        repositoryName: "__repository__", sensorName: "synix_exports_sensor"})
        { ... on Sensor { sensorState { id status } } } }""")["sensorOrError"]["sensorState"]
    stopped = dev.gql("""mutation($id: String) { stopSensor(id: $id) { __typename
        ... on StopSensorMutationResult { instigationState { status } } } }""", {"id": sensor["id"]})
    assert stopped["stopSensor"]["instigationState"]["status"] == "STOPPED", stopped


def _reexecute(dev: DagsterDev, run_id: str, strategy: str) -> str:
    """The UI's re-execution; the new run id, once that run ended successfully."""
    data = dev.gql("""mutation($p: ReexecutionParams!) { launchRunReexecution(reexecutionParams: $p) {
        __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
        ... on InvalidSubsetError { message } } }""", {"p": {"parentRunId": run_id, "strategy": strategy}})
    result = data["launchRunReexecution"]
    assert result["__typename"] == "LaunchRunSuccess", result
    new = result["run"]["runId"]
    _wait(lambda: dev.run_status(new) in ("SUCCESS", "FAILURE", "CANCELED"), f"re-execution {new} ended", dev)
    assert dev.run_status(new) == "SUCCESS", dev.output()[-3000:]
    return new


def _sensor_builds(runs: list[dict]) -> list[dict]:
    """The `synix_build_all` runs the export sensor launched, oldest first (not re-executions)."""
    return [r for r in reversed(runs) if r["jobName"] == "synix_build_all"
            and "dagster/parent_run_id" not in r["tags"]]


def _job_page(dev: DagsterDev, job: str) -> set[str]:
    """The run ids the UI's job page shows (its filter: the job name and the repository tag)."""
    q = """query($f: RunsFilter) { runsOrError(filter: $f) { ... on Runs { results { runId } } } }"""
    data = dev.gql(q, {"f": {"pipelineName": job,
                             "tags": [{"key": ".dagster/repository", "value": REPO_LABEL}]}})
    return {r["runId"] for r in data["runsOrError"]["results"]}


def _cli_run(dev: DagsterDev, job: str, status: str) -> dict:
    runs = [r for r in _runs(dev) if r["jobName"] == job and r["status"] == status
            and r["tags"].get("synix/trigger") == "cli" and "dagster/parent_run_id" not in r["tags"]]
    assert runs, f"no {status} {job} run of `synix run`"
    return runs[0]  # newest first


def test_every_run_synix_created_is_listed_on_its_job_page(live):
    root, dev = live
    runs = _runs(dev)
    jobs = {r["jobName"] for r in runs}
    assert {"synix_build_all", "synix_build_transcripts", "synix_build_episodes",
            "synix_update_projections"} <= jobs
    for job in jobs:
        assert _job_page(dev, job) == {r["runId"] for r in runs if r["jobName"] == job}, job


def test_the_runs_a_sensor_build_launched_name_that_build_and_the_sensor(live):
    root, dev = live
    runs = _runs(dev)
    # the sensor's builds (a tick already under way when the sensor was stopped may add a second)
    builds = _sensor_builds(runs)
    assert builds and {b["tags"]["dagster/sensor_name"] for b in builds} == {"synix_exports_sensor"}
    children = [r for r in runs if r["tags"].get("synix/build_run") in {b["runId"] for b in builds}]
    assert {r["jobName"] for r in children} >= {"synix_build_episodes"}
    # the UI's "Launched by" shows the sensor, not "Manually launched"
    assert {r["tags"].get("dagster/sensor_name") for r in children} == {"synix_exports_sensor"}


def test_a_failed_layer_run_of_synix_run_re_executes_from_failure_once_its_input_is_fixed(
        live, claude_export, conversation):
    root, dev = live
    claude_export(root / "exports" / "poison.json",
                  [conversation("bad-1", "Tomato blight", "2025-03-05", "tomato blight, now healthy")])
    assert plan_stale(root)["transcripts"] == 1
    # the layers in order, as `synix run` would: the transcripts run again (whole), then the
    # failed episodes run from its failure
    _reexecute(dev, _cli_run(dev, "synix_build_transcripts", "SUCCESS")["runId"], "ALL_STEPS")
    assert plan_stale(root)["transcripts"] == 0
    _reexecute(dev, _cli_run(dev, "synix_build_episodes", "FAILURE")["runId"], "FROM_FAILURE")
    plan = plan_stale(root)
    assert plan["transcripts"] == 0 and plan["episodes"] == 0
    assert "bad-1" not in dev.failed_partitions("episodes")


def test_layer_and_projections_runs_of_synix_run_re_execute_whole_and_change_nothing(live):
    root, dev = live
    finished = synix(root, "run", "--json")  # the months, core and projections the fix left
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert not any(plan_stale(root).values())
    stats = json.loads(synix(root, "stats", "--json").stdout)
    context = (root / "context.md").read_text()
    for job in ("synix_build_monthly", "synix_update_projections"):
        new = _reexecute(dev, _cli_run(dev, job, "SUCCESS")["runId"], "ALL_STEPS")
        assert new in _job_page(dev, job)
    assert not any(plan_stale(root).values())
    assert json.loads(synix(root, "stats", "--json").stdout) == stats
    assert (root / "context.md").read_text() == context


def test_the_sensor_build_and_its_runs_re_execute_from_the_ui_and_leave_the_memory_current(live):
    root, dev = live
    runs = _runs(dev)
    builds = _sensor_builds(runs)
    children = [r for r in runs if r["tags"].get("synix/build_run") in {b["runId"] for b in builds}]
    failed = [r for r in [*builds, *children] if r["status"] == "FAILURE"]
    assert failed  # the sensor's build met the poisoned conversation
    for run in failed:
        _reexecute(dev, run["runId"], "FROM_FAILURE")
    for run in [*builds, *children]:
        again = _reexecute(dev, run["runId"], "ALL_STEPS")
    assert not any(plan_stale(root).values())
    assert dev.active_runs() == 0
    # what a person sees: the last re-execution's run page, a success, of the sensor's build
    shot = shot_path(root.parent, "dagster-reexecuted-run.png")
    text = screenshot_page(dev.base, f"/runs/{again}", shot, ["Success", again[:8]])
    assert "Re-execution" in text or "re-execution" in text.lower(), text[:2000]
