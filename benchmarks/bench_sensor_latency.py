"""Export copy → current memory, with nobody running anything: a built demo project, a real
`dagster dev` (webserver + daemon, no DAGSTER_HOME), then an export with N new conversations is
copied into exports/. Measures the seconds until context.md is rewritten and until the last new
conversation is found by `synix search` (the fake LLM provider, so the LLM costs nothing).
With `--automation`, every `synix_automate_*` sensor is turned on first (declarative
automation builds, the export sensor only registers partitions: docs/dagster.md).

    python benchmarks/bench_sensor_latency.py 1 100
    python benchmarks/bench_sensor_latency.py --automation 1 100
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import _conversation, _make_claude_export  # noqa: E402
from tests.dagster.live import DagsterDev, synix  # noqa: E402

from synix_assets.app.init import demo_exports, init_project  # noqa: E402
from synix_assets.dagster_defs.vocabulary import EXPORTS_SENSOR  # noqa: E402


def _found(root: Path, conv_id: str, words: str) -> bool:
    out = synix(root, "search", words, "--json", "--limit", "50")
    hits = json.loads(out.stdout)["hits"] if out.returncode == 0 else []
    return any(s["conversation_id"] == conv_id for h in hits for s in h.get("sources", []))


def measure(n: int, tag: str, root: Path, dev: DagsterDev) -> dict:
    convs = [_conversation(f"{tag}-{i}", f"Quokka {tag} {i}", f"2025-{7 + i % 5:02d}-{1 + i % 27:02d}",
                           f"quokka{tag} wildlife survey {i}") for i in range(n)]
    staged = root.parent / f"{tag}.json"
    _make_claude_export(staged, convs)
    before = (root / "context.md").stat().st_mtime_ns
    wall0 = time.time()
    subprocess.run(["cp", str(staged), str(root / "exports" / staged.name)], check=True)
    t0 = time.monotonic()
    context_s = None
    while time.monotonic() - t0 < 600:
        if context_s is None and (root / "context.md").stat().st_mtime_ns != before:
            context_s = time.monotonic() - t0
        if context_s is not None and _found(root, f"{tag}-{n - 1}", f"quokka{tag}"):
            return {"new_conversations": n, "context_md_s": round(context_s, 1),
                    "searchable_s": round(time.monotonic() - t0, 1),
                    "timeline": timeline(dev, wall0)}
        time.sleep(0.5)
    raise SystemExit(f"not current after 600 s: {dev.output()[-2000:]}")


TICKS = """query($sel: SensorSelector!) { sensorOrError(sensorSelector: $sel) { ... on Sensor {
    sensorState { ticks(limit: 6) { timestamp endTimestamp status runIds } } } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { creationTime
    eventConnection { events { __typename ... on MessageEvent { timestamp message }
        ... on MaterializationEvent { assetKey { path } } } } } } }"""
MARKS = {"RunEnqueuedEvent": "enqueued", "RunDequeuedEvent": "dequeued", "RunStartingEvent": "starting",
         "RunStartEvent": "run process started", "ExecutionStepStartEvent": "step started",
         "RunSuccessEvent": "run succeeded", "RunFailureEvent": "run failed"}


def timeline(dev: DagsterDev, wall0: float) -> dict[str, float]:
    """Seconds after the copy at which each hop happened, from the sensor's ticks and the run's
    own events in Dagster's event log: where the latency goes."""
    sel = {"repositoryLocationName": "synix", "repositoryName": "__repository__", "sensorName": EXPORTS_SENSOR}
    ticks = dev.gql(TICKS, {"sel": sel})["sensorOrError"]["sensorState"]["ticks"]
    out: dict[str, float] = {}
    seen = [t for t in reversed(ticks) if t["timestamp"] >= wall0]
    for i, t in enumerate(seen):
        out[f"tick {i + 1} start ({t['status'].lower()})"] = round(t["timestamp"] - wall0, 2)
    launching = next((t for t in seen if t["runIds"]), None)
    if launching is None:
        return out
    out["launching tick end"] = round((launching["endTimestamp"] or 0) - wall0, 2)
    run = dev.gql(RUN, {"id": launching["runIds"][0]})["runOrError"]
    out["run created"] = round(run["creationTime"] - wall0, 2)
    for e in run["eventConnection"]["events"]:
        at = round(int(e["timestamp"]) / 1000 - wall0, 2)
        mark = MARKS.get(e["__typename"])
        if e["__typename"] == "MaterializationEvent":
            mark = "materialized " + "/".join(e["assetKey"]["path"])
        if e["__typename"] == "LogMessageEvent":
            mark = "log: " + e["message"][:70]
        if mark and mark not in out:
            out[mark] = at
    return out


ASSETS = ("transcripts", "episodes", "monthly", "core", "memory_index", "synix_context")
START = """mutation($sel: SensorSelector!) { startSensor(sensorSelector: $sel) { __typename } }"""


def automate(dev: DagsterDev) -> None:
    """Every automation sensor on, and evaluated twice: a drop meeting a sensor's first
    evaluation (which only records the state it starts from) would never be built."""
    import dagster as dg

    from synix_assets.dagster_defs.automation import sensor_name

    names = [sensor_name(dg.AssetKey(asset)) for asset in ASSETS]
    for name in names:
        dev.gql(START, {"sel": {"repositoryLocationName": "synix", "repositoryName": "__repository__",
                                "sensorName": name}})
    deadline = time.monotonic() + 300
    while not all(dev.output().count(f"Finished auto-materialization tick for {n} ") >= 2 for n in names):
        if time.monotonic() > deadline:
            raise SystemExit(f"automation sensors not evaluated twice in 300 s: {dev.output()[-2000:]}")
        time.sleep(1)


def main(sizes: list[int], automation: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = init_project(Path(tmp) / "mem", exports=demo_exports())
        assert synix(root, "run").returncode == 0
        dev = DagsterDev(root).wait_serving()
        try:
            time.sleep(25)  # the sensor's first tick (a no-op build) is not what is measured
            if automation:
                automate(dev)
            for i, n in enumerate(sizes):
                print(json.dumps(measure(n, f"b{i}", root, dev)), flush=True)
        finally:
            dev.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    auto = "--automation" in args
    main([int(a) for a in args if a != "--automation"] or [1, 100], automation=auto)
