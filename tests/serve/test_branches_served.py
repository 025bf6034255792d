"""Branches in `synix serve`: the API reads any branch, the explorer has a branch switcher that
sticks across pages, and a diff page shows two branches side by side (real server, real
chromium)."""
from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
TOPICAL = Path(__file__).resolve().parents[2] / "synix_assets" / "examples" / "topical.py"


@pytest.fixture(scope="module")
def branch(served_project):
    from synix_assets.app.branches import create_branch

    with served_project.open_store() as store:
        if store.branch_info("topical-view") is None:
            create_branch(served_project, "topical-view", pipeline_file=TOPICAL)
            # one episode summarised differently on the branch: a changed record to compare
            view = store.on_branch("topical-view")
            episode = view.list_layer("episodes")[0]
            view.put(layer="episodes", group_key=episode.group_key, materialization_key="branch-key",
                     content="A branch summary about kayaks.", parents=list(episode.parent_ids))
    return "topical-view"


def _get(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_api_reads_a_branch_and_refuses_an_unknown_one(server, branch):
    status, main = _get(server, "/v1/layers")
    assert status == 200 and "monthly" in [l["layer"] for l in main["layers"]]
    status, data = _get(server, f"/v1/layers?branch={branch}")
    assert status == 200
    layers = {l["layer"]: l for l in data["layers"]}
    assert "topics" in layers and "monthly" not in layers  # the branch's own pipeline
    assert layers["episodes"]["records"] == {l["layer"]: l for l in main["layers"]}["episodes"]["records"]
    status, err = _get(server, "/v1/layers?branch=ghost")
    assert status == 404 and "no branch 'ghost'" in err["error"]


def test_switcher_sticks_across_pages_and_the_diff_shows_both_branches(server, branch):
    from playwright.sync_api import sync_playwright

    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium (see .ci/run)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = b.new_context(base_url=f"http://127.0.0.1:{server}").new_page()
            page.set_default_timeout(20000)
            page.goto("/explore")
            switcher = page.locator("#branch-switcher select")
            assert set(switcher.locator("option").all_inner_texts()) >= {"main", branch}
            switcher.select_option(branch)
            page.wait_for_url(f"**/explore?branch={branch}")  # past /branch?branch=: redirected
            page.goto("/pipeline")  # no ?branch=: the switcher's choice still applies
            assert page.locator("#branch-switcher select").input_value() == branch
            page.locator("#branch-switcher a").click()
            page.wait_for_url("**/branches/diff*")
            steps = page.locator("#diff-steps").inner_text()
            assert "topics" in steps and "added" in steps and "monthly" in steps
            assert "episodes" in page.locator("#diff-layers").inner_text()
            records = page.locator("#diff-records").inner_text()
            assert "A branch summary about kayaks." in records  # the branch's text
            assert records.count("episodes-") >= 2  # beside main's record
            page.locator("#branch-switcher select").select_option("main")
            page.wait_for_url("**/explore")
            assert page.locator("#branch-switcher select").input_value() == "main"
        finally:
            b.close()


def test_ask_and_the_mcp_tools_read_the_branch_they_were_opened_for(tmp_path):
    import os
    import subprocess
    import sys

    from synix_assets.app.memory import MemoryService
    from synix_assets.project import ProjectPaths
    from synix_assets.serve import tools

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY")}

    def synix(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "synix_assets.cli", *args], capture_output=True,
                             text=True, env=env, timeout=300)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout

    root = tmp_path / "mem"
    synix("init", str(root), "--demo")
    synix("-p", str(root), "run")
    synix("-p", str(root), "branch", "create", "topical-view", "--pipeline", str(TOPICAL))
    synix("-p", str(root), "run", "--branch", "topical-view")
    answer = json.loads(synix("-p", str(root), "ask", "sourdough starter", "--json", "--branch", "topical-view"))
    assert answer["evidence"]
    svc = MemoryService(ProjectPaths(root, "topical-view"))
    try:
        by_name = {t.__name__: t for t in tools.memory_tools(svc)}
        assert "topics" in {l["layer"] for l in svc.layers()}  # no branch named: its own
        assert "topics" in {l["layer"] for l in by_name["get_map"]()["layers"]}
        assert by_name["search_memories"]("sourdough")["hits"]
    finally:
        svc.close()
