"""The Dagster UI on a big project: a built project of N conversations (default 10,000, the fake
LLM provider at zero latency), a real `dagster dev` on loopback (webserver + daemon), and headless
Debian Chromium driven by playwright. Measures, per page, the seconds from navigation until a
specific element is rendered, and every GraphQL query the page sent (its server time as the
browser saw it: request sent → response end), plus the same key queries sent directly.

    python benchmarks/bench_ui_pages.py --n 10000 [--project DIR] [--repeat 3]

Pages: the asset graph of the `memory` group (waits until the nodes show their live data: the
"N partitions" and "100% filled" of the partitioned layers) and the partitions page of
`episodes` (N partitions; waits for "Materialized (N)" and "N Partitions Selected").
With --project, an already built project is used as it is (nothing is copied or rebuilt).
Benchmarks are not tests; nothing here is run by the test suite.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from generate_exports import generate  # noqa: E402 (benchmark-local module)
from tests.dagster.live import CHROMIUM, DagsterDev, synix  # noqa: E402

from synix_assets.app.init import init_project  # noqa: E402

SELECTOR = {"repositoryLocationName": "synix", "repositoryName": "__repository__"}
# The queries behind the two pages, sent directly (what the webserver costs without a browser).
DIRECT = {
    "asset nodes with partition stats": """{ assetNodes { assetKey { path } isPartitioned
        partitionStats { numMaterialized numPartitions numFailed numMaterializing } } }""",
    "episodes partition statuses": """{ assetNodeOrError(assetKey: {path: ["episodes"]}) { ... on AssetNode {
        assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions
        failedPartitions unmaterializedPartitions materializingPartitions } } } } }""",
    "episodes partition keys": """{ assetNodeOrError(assetKey: {path: ["episodes"]}) { ... on AssetNode {
        partitionKeysByDimension { name partitionKeys } } } }""",
}


def build_project(n: int, tmp: Path) -> Path:
    export = tmp / "conversations.json"
    generate(n, 24, 7, "chatgpt", export)
    root = init_project(tmp / "mem", exports=[export])
    export.unlink()
    started = time.monotonic()
    out = synix(root, "run", timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"build of {n} conversations failed: {out.stderr[-2000:]}")
    print(f"built {n} conversations in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return root


def wait_loaded(dev: DagsterDev, timeout_s: float = 300) -> None:
    """Until the code location is loaded and the export sensor has ticked once (its first tick
    syncs the instance with the store: not what the pages cost)."""
    q = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { __typename
        ... on Sensor { sensorState { ticks(limit: 1) { status } } } } }"""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            data = dev.gql(q, {"s": {**SELECTOR, "sensorName": "synix_exports_sensor"}})["sensorOrError"]
            if data["__typename"] == "Sensor" and data["sensorState"]["ticks"]:
                return
        except (OSError, AssertionError):
            pass  # the location is still loading
        time.sleep(1)
    raise SystemExit(f"the code location did not load / the sensor never ticked: {dev.output()[-2000:]}")


def sensor_ticks(dev: DagsterDev) -> list[float]:
    """Seconds the export sensor's last ticks took (each syncs the instance with the store)."""
    q = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor {
        sensorState { ticks(limit: 10) { timestamp endTimestamp } } } } }"""
    ticks = dev.gql(q, {"s": {**SELECTOR, "sensorName": "synix_exports_sensor"}})["sensorOrError"]
    return [round(t["endTimestamp"] - t["timestamp"], 2) for t in ticks["sensorState"]["ticks"]
            if t["endTimestamp"]]


def direct_queries(dev: DagsterDev) -> dict[str, float]:
    out = {}
    for name, query in DIRECT.items():
        started = time.monotonic()
        dev.gql(query)
        out[name] = round(time.monotonic() - started, 2)
    return out


def _graphql_log(page) -> list[dict]:
    """Every GraphQL request the page sends: its operation and server time (request → response end)."""
    log: list[dict] = []

    def done(request) -> None:
        if "/graphql" not in request.url or request.method != "POST":
            return
        try:
            op = json.loads(request.post_data or "{}").get("operationName") or "?"
        except ValueError:
            op = "?"
        timing = request.timing
        log.append({"op": op, "s": round((timing["responseEnd"] - timing["requestStart"]) / 1000, 3)
                    if timing["responseEnd"] > 0 else None, "at": time.monotonic()})

    page.on("requestfinished", done)
    return log


def measure_page(browser, url: str, wait, label: str) -> dict:
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    try:
        log = _graphql_log(page)
        started = time.monotonic()
        page.goto(url)
        wait(page)
        rendered = time.monotonic() - started
        page.wait_for_timeout(3000)  # queries the page sends right after (live data polls)
        queries: dict[str, list[float]] = {}
        for entry in log:
            if entry["s"] is not None and entry["at"] - started <= rendered + 0.5:
                queries.setdefault(entry["op"], []).append(entry["s"])
        slowest = sorted(((max(v), k) for k, v in queries.items()), reverse=True)[:6]
        return {"page": label, "rendered_s": round(rendered, 2),
                "graphql_queries_before_render": sum(len(v) for v in queries.values()),
                "slowest_queries_s": {k: s for s, k in slowest}}
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--project", type=Path, help="an already built project (else one is built)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = args.project.resolve() if args.project else build_project(args.n, Path(tmp))
        n = args.n
        dev = DagsterDev(root).wait_serving(timeout_s=300)
        try:
            wait_loaded(dev)
            graph_url = f"{dev.base}/locations/synix/asset-groups/memory"
            parts_url = f"{dev.base}/assets/episodes?view=partitions"

            def graph_ready(page) -> None:
                # every node drawn with its live data: the conversation layers' partition
                # counts and the three partitioned layers' fill bars
                page.get_by_text(f"{n:,} partitions").first.wait_for(timeout=180_000)
                page.wait_for_function("() => (document.body.innerText.match(/100% filled/g) || [])"
                                       ".length >= 3", timeout=180_000)

            def partitions_ready(page) -> None:
                # the status counts (from the partition statuses query) and the partition list
                page.get_by_text(f"Materialized ({n})").first.wait_for(timeout=180_000)
                page.get_by_text(f"{n:,} Partitions Selected").first.wait_for(timeout=180_000)

            results = []
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                try:
                    for i in range(args.repeat):
                        for url, wait, label in ((graph_url, graph_ready, "asset graph"),
                                                 (parts_url, partitions_ready, "episodes partitions")):
                            r = measure_page(browser, url, wait, label)
                            results.append(r)
                            print(json.dumps({"repeat": i + 1, **r}), flush=True)
                        print(json.dumps({"repeat": i + 1, "direct_graphql_s": direct_queries(dev)}), flush=True)
                finally:
                    browser.close()
            print(json.dumps({"export_sensor_tick_s": sensor_ticks(dev)}))
            for label in ("asset graph", "episodes partitions"):
                times = [r["rendered_s"] for r in results if r["page"] == label]
                print(json.dumps({"page": label, "conversations": n, "median_rendered_s": statistics.median(times),
                                  "runs": times}))
        finally:
            dev.stop()


if __name__ == "__main__":
    main()
