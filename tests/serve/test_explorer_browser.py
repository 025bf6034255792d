"""The explorer in a real headless browser (Debian's chromium via playwright-python): the
drill-down from core to the transcript, search, the context page, escaping. With
SYNIX_DOCS_SCREENSHOTS=1 the screenshots refresh docs/ (explorer-drilldown.png,
explorer-search.png, explorer-context.png)."""
from __future__ import annotations

import re
import shutil

import pytest

from tests.support.screenshots import shot_path

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium (see .ci/run)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1500, "height": 900}, base_url=f"http://127.0.0.1:{server}")
    pg = ctx.new_page()
    pg.set_default_timeout(20000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    ctx.close()
    assert errors == [], errors


def test_drill_down_from_core_through_rollup_and_episode_to_the_transcript(page, tmp_path):
    page.goto("/explore")
    results = page.locator("#col-results")
    assert results.locator("h2").inner_text().startswith("core")
    results.locator("a.item").first.click()                       # core
    page.wait_for_url("**sel=core-*")
    sources = page.locator("#col-sources")
    assert sources.locator("h3").inner_text().startswith("Sources")
    months = sources.locator("a.item")
    assert months.count() == 6 and months.first.locator(".layer").text_content() == "monthly"
    months.nth(2).click()                                         # a monthly rollup
    page.wait_for_url("**src=monthly-*")
    detail = page.locator("#col-detail")
    assert detail.locator("h2 .meta").inner_text() == "monthly"
    episodes = detail.locator("a.item")
    assert episodes.count() >= 1 and episodes.first.locator(".layer").text_content() == "episodes"
    episode_title = episodes.first.locator(".title").inner_text()
    episodes.first.click()                                        # an episode: the rollup moves to the middle
    page.wait_for_url("**src=episodes-*")
    assert page.locator("#col-sources h2 .meta").inner_text() == "monthly"
    assert page.locator("#col-detail h2 a").inner_text() == episode_title
    transcript = page.locator("#col-detail a.item").first
    assert transcript.locator(".layer").text_content() == "transcripts"
    transcript.click()                                            # the transcript
    page.wait_for_url("**src=transcripts-*")
    assert page.locator("#col-sources h2 .meta").inner_text() == "episodes"
    assert page.locator("#col-detail h2 a").inner_text() == episode_title
    messages = page.locator("#col-detail .msg")
    assert messages.count() >= 2 and messages.first.locator(".speaker").inner_text().startswith("#1")
    trail = page.locator("nav.trail").inner_text()
    assert trail.startswith("core:") and "monthly" in trail and "transcripts" in trail
    page.screenshot(path=str(shot_path(tmp_path, "explorer-drilldown.png")))


def test_search_then_drill_into_the_transcript_scrolled_to_the_matching_messages(page, tmp_path):
    page.goto("/explore")
    page.fill("input[name=query]", "marathon")
    page.press("input[name=query]", "Enter")
    page.wait_for_url(re.compile(r"[?&]query=marathon"))
    hits = page.locator("#col-results > a.item")
    hits.first.wait_for()
    assert "Marathon" in hits.first.locator(".title").inner_text()
    assert hits.first.locator("mark").count() >= 1
    hits.first.click()
    page.wait_for_url("**sel=episodes-*")
    src = page.locator("#col-sources a.item").first
    assert src.locator(".layer").text_content() == "transcripts"
    src.click()
    page.wait_for_url("**src=transcripts-*")
    highlighted = page.locator("#col-detail .msg.hl")
    assert highlighted.count() >= 1
    assert "marathon" in highlighted.first.inner_text().lower()
    assert highlighted.first.locator("mark").count() >= 1
    page.screenshot(path=str(shot_path(tmp_path, "explorer-search.png")))


def test_a_passage_hit_opens_the_transcript_scrolled_to_its_message_range(page):
    page.goto("/explore?query=calf+raises")
    passage = page.locator("#passages a.item").first
    passage.wait_for()
    rng = passage.locator(".meta").inner_text()
    assert "messages" in rng
    passage.click()
    page.wait_for_url("**range=*")
    highlighted = page.locator("#col-detail .msg.hl")
    assert highlighted.count() >= 1 and "calf raises" in highlighted.first.inner_text().lower()
    # Scrolled to the match: the highlighted message sits inside the visible part of its column.
    page.wait_for_timeout(300)
    box = highlighted.first.bounding_box()
    col = page.locator("#col-detail").bounding_box()
    assert box and col and col["y"] - 1 <= box["y"] <= col["y"] + col["height"]


def test_layer_scoped_search_pipeline_and_record_audit(page):
    page.goto("/explore")
    page.fill("input[name=query]", "marathon")
    page.select_option("select[name=step]", "episodes")
    page.press("input[name=query]", "Enter")
    page.wait_for_url(re.compile(r"query=marathon&step=episodes"))
    layers = page.locator("#col-results > a.item .layer").all_text_contents()
    assert layers and set(layers) == {"episodes"}
    hits = page.locator("#col-results > a.item").evaluate_all("els => els.map(e => e.dataset.id)")
    page.goto("/explore?q=marathon&layers=episodes")  # a bookmark made before the design names
    assert page.locator("#col-results > a.item").evaluate_all("els => els.map(e => e.dataset.id)") == hits
    assert page.locator("select[name=step]").input_value() == "episodes"
    page.goto("/pipeline")
    assert "25 records" in page.locator("#node-episodes").inner_text()
    assert page.locator("#node-exports").inner_text().startswith("exports")
    page.locator("#node-episodes a").click()
    page.wait_for_url("**/layers/episodes")
    page.locator(".list a.item").first.click()
    page.wait_for_url("**/records/episodes-*")
    audit = page.locator("#audit").inner_text()
    assert "fake-v1" in audit and "rendered_prompt_hash" in audit
    assert page.locator("ul.tree a").first.inner_text() == "episodes"


def test_context_page_links_its_provenance_to_the_records(page, tmp_path):
    page.goto("/context")
    assert page.locator("#context-body").inner_text().startswith("# Memory of")
    link = page.locator("#context-provenance a").first
    assert link.inner_text().startswith("core-")
    page.screenshot(path=str(shot_path(tmp_path, "explorer-context.png")))
    link.click()
    page.wait_for_url("**/records/core-*")
    assert page.locator("h1 .meta").inner_text().startswith("core")


def test_hostile_export_text_is_shown_as_text_never_run(page):
    page.goto("/explore?query=kayak")
    assert "<script>window.pwned=1</script> Hostile kayak plan" in page.locator("#col-results").inner_text()
    page.locator("#col-results a.item").first.click()
    page.wait_for_url("**sel=*")
    page.locator("#col-sources a.item").first.click()
    page.wait_for_url("**src=*")
    assert '<img src=x onerror="window.pwned=2">' in page.locator("#col-detail").inner_text()
    assert page.evaluate("typeof window.pwned") == "undefined"


def test_an_unknown_parameter_is_an_error_page_naming_what_the_page_accepts(page):
    answer = page.goto("/explore?query=marathon&colour=red")
    assert answer.status == 400
    alert = page.locator("p.error[role=alert]").inner_text()
    assert alert.startswith("the page /explore takes no parameter 'colour' — it accepts query, step,")
    assert "(older spellings: q → query, layers → step)" in alert
    page.locator("header a.brand").click()  # the explorer's own navigation is still there
    page.wait_for_url("**/explore")
    assert page.locator("#col-results h2").inner_text()


def test_openapi_docs_page_renders_from_vendored_files(page):
    requested: list[str] = []
    page.on("request", lambda req: requested.append(req.url))
    page.goto("/docs")
    page.locator(".swagger-ui .opblock-summary-path").first.wait_for()
    paths = page.locator(".swagger-ui .opblock-summary-path").all_text_contents()
    assert "/v1/search" in paths and "/v1/brief" in paths
    assert requested and all(url.startswith(page.url.split("/docs")[0]) for url in requested)



def test_search_as_of_a_date_keeps_the_hits_dated_before_then_and_the_links_keep_the_date(page):
    page.goto("/explore?query=marathon")
    hits = page.locator("#col-results > a.item")
    hits.first.wait_for()
    dates = sorted({d[:10] for d in hits.locator(".meta").all_inner_texts() if d[:4].isdigit()})
    assert len(dates) >= 2, dates  # the demo's marathon conversations span several days
    cutoff, before = dates[-1], hits.count()  # as of the start of the newest hit's day
    page.fill("input[name=as_of]", cutoff)
    page.press("input[name=query]", "Enter")
    page.wait_for_url(re.compile(r"as_of=" + cutoff))
    assert f"as of {cutoff}" in page.locator("#col-results h2").inner_text()
    kept = page.locator("#col-results > a.item")
    kept.first.wait_for()
    kept_dates = [d[:10] for d in kept.locator(".meta").all_inner_texts()]
    assert kept_dates and all(d < cutoff for d in kept_dates) and kept.count() < before
    href = kept.first.get_attribute("href")
    assert f"as_of={cutoff}" in href and "sel=" in href, href
    page.goto(href)  # (a click may land on the date picker still open)
    assert page.locator("#col-sources h2").inner_text()  # the hit's record beside the same results
    assert f"as of {cutoff}" in page.locator("#col-results h2").inner_text()
