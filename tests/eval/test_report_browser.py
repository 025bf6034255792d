"""`synix eval report --html` opened in a real headless browser (Debian's chromium via
playwright-python): every branch, baseline and metric is on the page and every chart draws."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from eval_fixtures import LOCOMO_TINY

from synix_assets.cli.main import main

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
SYSTEMS = ("main", "topical", "raw-rag")
MODES = ("fts", "hybrid")
METRIC_COLUMNS = ("S@1", "S@5", "S all@5", "S@10", "T@1", "T@5", "T@10", "T all@10", "p50 ms", "provenance", "fresh",
                  "QA acc", "$ / q", "build LLM calls", "build s")


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    from synix_assets.app.branches import create_branch
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project

    tmp = tmp_path_factory.mktemp("eval_report")
    with pytest.MonkeyPatch.context() as mp:
        for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH", "SYNIX_BRANCH"):
            mp.delenv(var, raising=False)
        mp.setenv("SYNIX_LLM_PROVIDER", "extractive")
        data = tmp / "locomo-tiny.json"
        data.write_text(json.dumps([LOCOMO_TINY]))
        root = tmp / "proj"
        init_project(root, template="monthly")
        topical = Path(__import__("synix_assets").__path__[0]) / "examples" / "topical.py"
        create_branch(ProjectPaths(root), "topical", pipeline_file=topical)
        runner = CliRunner()
        ran = runner.invoke(main, ["eval", "locomo", "--data", str(data), "-p", str(root), "--branch", "main",
                                   "--branch", "topical", "--baseline", "raw-rag", "--modes", ",".join(MODES)])
        assert ran.exit_code == 0, ran.output
        page = tmp / "report.html"
        rep = runner.invoke(main, ["eval", "report", "-p", str(root), "--html", str(page)])
        assert rep.exit_code == 0, rep.output
    return page


@pytest.fixture(scope="module")
def page(report_file):
    from playwright.sync_api import sync_playwright

    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium (see .ci/run)"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(report_file.as_uri())
            yield pg
            assert errors == [], errors
        finally:
            browser.close()


def test_main_table_shows_every_branch_baseline_and_metric(page):
    head = page.locator("table").first.locator("th").all_inner_texts()
    for column in METRIC_COLUMNS:
        assert column in head
    rows = [r.locator("td").all_inner_texts() for r in page.locator("table").first.locator("tbody tr").all()]
    shown = {(r[1], r[2]) for r in rows}
    assert shown == {(s, m) for s in SYSTEMS for m in MODES}
    s5 = head.index("S@5")
    for r in rows:  # every recall cell is a number in [0, 1]
        assert 0.0 <= float(r[s5]) <= 1.0
    main_fts = next(r for r in rows if r[1] == "main" and r[2] == "fts")
    assert main_fts[head.index("provenance")] == "100.0 %"
    assert page.locator("h3", has_text="locomo by category").is_visible()


def test_every_chart_renders_with_a_legend_for_each_system(page):
    charts = page.locator("div.chart svg")
    titles = [c.get_attribute("aria-label") for c in charts.all()]
    for title in ("locomo: session recall by k", "locomo: turn recall by k",
                  "locomo: session recall@5 by category", "locomo: altitude of the top hit (questions)",
                  "locomo: cost"):
        assert title in titles
    for chart in charts.all():
        box = chart.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 200  # laid out, not collapsed
    recall = charts.nth(titles.index("locomo: session recall by k"))
    legend = recall.locator("text").all_text_contents()
    for s in SYSTEMS:
        for m in MODES:
            assert f"{s} ({m})" in legend
    lines = recall.locator("polyline")
    assert lines.count() == len(SYSTEMS) * len(MODES)
    for line in lines.all():  # each line is drawn inside the chart, from k=1 to k=10
        box = line.bounding_box()
        assert box and box["width"] > 100
    bars = charts.nth(titles.index("locomo: session recall@5 by category")).locator("rect[height]")
    heights = [float(b.get_attribute("height")) for b in bars.all() if b.locator("title").count()]
    assert heights and max(heights) > 0
    altitude = charts.nth(titles.index("locomo: altitude of the top hit (questions)"))
    assert {"main (fts)", "topical (fts)"} <= set(altitude.locator("text").all_text_contents())
