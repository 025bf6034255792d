"""Helpers for the tests that drive a real `dagster dev`: start/stop by PID, GraphQL, staleness,
`synix` subprocesses, a headless Chromium."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra) -> dict:
    """The environment of a user who set nothing: no DAGSTER_HOME, no SYNIX_PROJECT."""
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "SYNIX_PROJECT")}
    env.update(SYNIX_LLM_PROVIDER="fake", **extra)
    return env


class DagsterDev:
    """`dagster dev` (or, with program="dg", `dg dev`) on a free loopback port, stopped by PID."""

    def __init__(self, cwd: Path, *args: str, env: dict | None = None, program: str = "dagster"):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = cwd / f"dagster-dev-{self.port}.log"
        self._out = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [str(BIN / program), "dev", "-h", "127.0.0.1", "-p", str(self.port), *args],
            cwd=cwd, env=env or clean_env(), stdout=self._out, stderr=subprocess.STDOUT,
            start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_serving(self, timeout_s: float = 150) -> "DagsterDev":
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{self.base}/server_info", timeout=2):
                    return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"dagster dev did not serve {self.base}: {self.output()[-3000:]}")
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._out.close()

    def gql(self, query: str, variables: dict | None = None) -> dict:
        req = urllib.request.Request(f"{self.base}/graphql",
                                     data=json.dumps({"query": query, "variables": variables or {}}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            data = json.loads(resp.read())
        assert "errors" not in data, data["errors"]
        return data["data"]

    def launch(self, job: str, tags: dict[str, str]) -> str:
        """Launch a job as the UI's Launch button does; returns the run id."""
        data = self.gql("""mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
            __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
                        {"p": {"selector": {"repositoryLocationName": "synix",
                                            "repositoryName": "__repository__", "jobName": job},
                               "executionMetadata": {"tags": [{"key": k, "value": v}
                                                              for k, v in tags.items()]}}})
        assert data["launchRun"]["__typename"] == "LaunchRunSuccess", data
        return data["launchRun"]["run"]["runId"]

    def launch_backfill(self, assets: list[str], partitions: list[str]) -> str:
        """"Materialize all" with every partition chosen, as the UI's dialog sends it
        (`launchPartitionBackfill`: the assets and the root's partition keys); the backfill id."""
        data = self.gql("""mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
            __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }""",
                        {"p": {"assetSelection": [{"path": a.split("/")} for a in assets],
                               "partitionNames": partitions, "fromFailure": False, "tags": []}})
        assert data["launchPartitionBackfill"]["__typename"] == "LaunchBackfillSuccess", data
        return data["launchPartitionBackfill"]["backfillId"]

    def backfill(self, backfill_id: str) -> dict:
        """The backfill's status and its runs (id, job, status, start and end time)."""
        q = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill {
            status runs(limit: 1000) { runId jobName status startTime endTime } } } }"""
        return self.gql(q, {"id": backfill_id})["partitionBackfillOrError"]

    def partition_keys(self, asset: str) -> list[str]:
        q = """query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) {
            ... on AssetNode { partitionKeys } } }"""
        return self.gql(q, {"path": asset.split("/")})["assetNodeOrError"]["partitionKeys"]

    def run_status(self, run_id: str) -> str:
        q = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"
        return self.gql(q, {"id": run_id})["runOrError"]["status"]

    def active_runs(self) -> int:
        data = self.gql("""{ runsOrError(filter: {statuses: [QUEUED, NOT_STARTED, STARTING, STARTED]})
            { ... on Runs { results { runId } } } }""")
        return len(data["runsOrError"]["results"])

    def failed_partitions(self, asset: str) -> list[str]:
        q = """query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
            assetPartitionStatuses { ... on DefaultPartitionStatuses { failedPartitions } } } } }"""
        node = self.gql(q, {"path": asset.split("/")})["assetNodeOrError"]
        return node["assetPartitionStatuses"]["failedPartitions"]

    def reload(self) -> None:
        data = self.gql('mutation { reloadRepositoryLocation(repositoryLocationName: "synix") '
                        '{ __typename ... on WorkspaceLocationEntry { loadStatus } } }')
        assert data["reloadRepositoryLocation"]["loadStatus"] == "LOADED"

    def asset_keys(self) -> set[str]:
        nodes = self.gql("{ assetNodes { assetKey { path } } }")["assetNodes"]
        return {"/".join(n["assetKey"]["path"]) for n in nodes}

    def staleness(self) -> dict[str, Counter]:
        """Per asset: Counter of Dagster's stale status over its partitions (or of its one status)."""
        nodes = self.gql("{ assetNodes { assetKey { path } partitionKeys } }")["assetNodes"]
        out = {}
        for n in nodes:
            path, keys = n["assetKey"]["path"], n["partitionKeys"]
            field = "staleStatusByPartition(partitions: $keys)" if keys else "staleStatus"
            params = "$path: [String!]!" + (", $keys: [String!]!" if keys else "")
            q = (f"query({params}) {{ assetNodeOrError(assetKey: {{path: $path}}) "
                 f"{{ ... on AssetNode {{ {field} }} }} }}")
            node = self.gql(q, {"path": path, **({"keys": keys} if keys else {})})["assetNodeOrError"]
            value = node.get("staleStatusByPartition") if keys else [node["staleStatus"]]
            out["/".join(path)] = Counter(value)
        return out

    def checks(self) -> dict[str, str]:
        nodes = self.gql("""{ assetNodes { assetKey { path } assetChecksOrError { ... on AssetChecks {
            checks { name executionForLatestMaterialization { status } } } } } }""")["assetNodes"]
        return {"/".join(n["assetKey"]["path"]): c["executionForLatestMaterialization"]["status"]
                for n in nodes for c in n["assetChecksOrError"].get("checks", [])
                if c["executionForLatestMaterialization"]}


def wait_until(predicate, what: str, dev: "DagsterDev", bound_s: float, every_s: float = 2) -> None:
    """Poll `predicate` until it holds; fail after `bound_s` with the server's last output."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every_s)
    pytest.fail(f"not within {bound_s}s: {what}\n{dev.output()[-3000:]}")


def built_demo_project(tmp_path_factory, name: str) -> Path:
    """A project made by `synix init` with the demo exports and built by `synix run`."""
    from synix_assets.app.init import demo_exports, init_project

    root = tmp_path_factory.mktemp(name) / "mem"
    init_project(root, exports=demo_exports())
    built = synix(root, "run", "--json")
    assert built.returncode == 0, built.stderr[-2000:]
    return root


def edit_episode_prompt(root: Path) -> None:
    """A prompt edit in a `synix init` project: every episode, month, the core and both
    projections to rebuild."""
    text = (root / "pipeline.py").read_text()
    text = text.replace("prompt=prompts.episode_summary)", "prompt=episode_summary_v2)")
    edit = ('\n\ndef episode_summary_v2(record):\n'
            '    return prompts.episode_summary(record) + "\\nKeep it short."\n')
    (root / "pipeline.py").write_text(text.replace("\npipeline = Pipeline", edit + "\npipeline = Pipeline", 1))


def synix(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "synix"), "-p", str(project), *args], env=clean_env(),
                          capture_output=True, text=True, timeout=timeout)


def plan_stale(project: Path, *args: str) -> dict[str, int]:
    """Per layer/projection, what `synix plan` would rebuild (Dagster asset names); `args`
    e.g. `--branch exp`."""
    out = synix(project, "plan", "--json", *args)
    assert out.returncode == 0, out.stderr[-2000:]
    plan = json.loads(out.stdout)
    stale = {name: int(v["stale"]) for name, v in plan["layers"].items()}
    names = {"memory-index": "memory_index", "context": "synix_context"}
    stale.update({names.get(k, k): int(bool(v["stale"])) for k, v in plan["projections"].items()})
    return stale


def dagster_stale(status: dict[str, Counter]) -> dict[str, int]:
    return {k: v.get("STALE", 0) for k, v in status.items() if k != "sources/exports"}


def screenshot_graph(base: str, group: str, path: Path, wait_text: str | None = None) -> None:
    """Open the asset group graph in headless Chromium, wait for `wait_text`, save a screenshot."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    def opened(page) -> None:
        page.get_by_text("Latest event").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        skip = page.get_by_role("button", name="Skip")  # Dagster's one-time community prompt
        if skip.count():
            skip.first.click()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.goto(f"{base}/locations/synix/asset-groups/{group}")
            opened(page)
            # The graph's status badges come from a live-data query that now and then misses
            # its first poll on a loaded machine: reload (at most twice) rather than wait forever.
            for attempt in range(3 if wait_text else 0):
                try:
                    page.get_by_text(wait_text).first.wait_for(timeout=40_000)
                    break
                except PlaywrightTimeout:
                    if attempt == 2:
                        raise
                    page.reload()
                    opened(page)
            page.wait_for_timeout(1000)
            page.screenshot(path=str(path))
        finally:
            browser.close()


def screenshot_page(base: str, route: str, path: Path, wait_texts: list[str],
                    scroll_to: str | None = None, gone: str | None = None) -> str:
    """Open `route` of the Dagster UI in headless Chromium, wait until every one of `wait_texts`
    shows (`scroll_to`: and scroll that text into view; `gone`: and this text no longer shows),
    save a screenshot and return the page's text (what a person sees)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.goto(f"{base}{route}")
            skip = page.get_by_role("button", name="Skip")  # Dagster's one-time community prompt
            for text in wait_texts:
                page.get_by_text(text).first.wait_for(timeout=60_000)
            page.wait_for_timeout(1500)  # the community prompt opens a moment after the page
            if skip.count():
                skip.first.click()
                page.wait_for_timeout(500)
            if gone:
                page.get_by_text(gone).first.wait_for(state="detached", timeout=60_000)
            if scroll_to:
                page.get_by_text(scroll_to).first.scroll_into_view_if_needed()
                page.wait_for_timeout(300)
            page.screenshot(path=str(path))
            return page.inner_text("body")
        finally:
            browser.close()
