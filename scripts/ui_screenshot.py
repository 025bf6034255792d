"""Screenshot of the Dagster asset graph of a Synix project (for the README; optional in CI).

    python scripts/ui_screenshot.py PROJECT_DIR docs/asset-graph.png

Needs Debian's chromium (`apt-get install -y chromium`) and `pip install playwright` (its Python
driver only; the browser is Debian's, nothing is downloaded). Starts dagster-webserver on loopback
for the project (DAGSTER_HOME = PROJECT_DIR/.synix/dagster), waits until it answers, dismisses the
first-visit dialog, expands the memory group and captures the asset graph. Chromium is started
without background networking so it makes no outside connections.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync",
                  "--hide-scrollbars"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("dagster-webserver exited before answering")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"dagster-webserver did not answer at {url} within {timeout_s:.0f}s")


def capture(chromium: str, url: str, out: Path, size: str) -> None:
    from playwright.sync_api import sync_playwright

    width, height = (int(x) for x in size.split(","))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS[1:])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(url, wait_until="networkidle", timeout=120_000)
        skip = page.get_by_role("button", name="Skip")
        if skip.count():
            skip.first.click()
        page.wait_for_timeout(3000)
        page.screenshot(path=str(out))
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("project", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--path", default="/assets/memory_index?view=lineage&lineageScope=upstream&lineageDepth=6", help="UI page to capture")
    ap.add_argument("--size", default="1600,1000")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("chromium not found: apt-get install -y chromium")
    project = args.project.resolve()
    port = free_port()
    env = dict(os.environ, DAGSTER_HOME=str(project / ".synix" / "dagster"))
    web = subprocess.Popen([sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml",
                            "-h", "127.0.0.1", "-p", str(port)], cwd=project, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/server_info", web)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        capture(chromium, base + args.path, args.out, args.size)
        print(f"wrote {args.out}")
    finally:
        web.terminate()
        web.wait(timeout=20)


if __name__ == "__main__":
    main()
