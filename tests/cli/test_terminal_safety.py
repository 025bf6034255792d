"""Export text never reaches the terminal raw: escape sequences (clear screen, OSC 8 links,
window titles), BEL, Rich markup and emoji codes in titles, snippets, ids and file names are
shown literally by the real `synix` executable, and never interpreted."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synix_assets.cli.render import plain, safe

pytestmark = pytest.mark.slow

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"
EVIL_TITLE = ("Evil\x1b[2J \x1b]8;;http://evil.example\x07click\x1b]8;;\x07 \x1b]0;pwned\x07 "
              "ring\x07 root:x:0 [bold]loud[/bold] [redacted] \u202eexe.txt")
EVIL_TEXT = "the zebrafish \x1b[31mred\x1b[0m note [redacted] root:x:0 :thumbs_up: ends"
SHOWN = ["\\x1b[2J", "\\x1b]8;;http://evil.example\\x07click", "\\x1b]0;pwned\\x07", "ring\\x07",
         "root:x:0", "[bold]loud[/bold]", "[redacted]", "\\u202eexe.txt"]


def synix(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SYNIX_DEBUG", "SYNIX_PROJECT")}
    env.update({"SYNIX_LLM_PROVIDER": "extractive", "COLUMNS": "400"})
    proc = subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def assert_safe(output: str) -> None:
    for raw in ("\x1b", "\x07", "\u202e", "❌", "👍"):
        assert raw not in output, (raw, output)


@pytest.fixture(scope="module")
def evil_project(tmp_path_factory):
    base = tmp_path_factory.mktemp("evil")
    assert synix("init", "mem", cwd=base).returncode == 0
    root = base / "mem"
    messages = [{"uuid": f"m{i}", "sender": s, "text": f"{EVIL_TEXT} {i}",
                 "content": [{"type": "text", "text": f"{EVIL_TEXT} {i}"}],
                 "created_at": f"2025-02-03T10:0{i}:00Z"}
                for i, s in enumerate(["human", "assistant", "human", "assistant"])]
    export = [{"uuid": "evil-1", "name": EVIL_TITLE, "created_at": "2025-02-03T10:00:00Z",
               "updated_at": "2025-02-03T10:03:00Z", "chat_messages": messages}]
    (root / "exports" / "talks.json").write_text(json.dumps(export), encoding="utf-8")
    (root / "exports" / "bad\x1b[2J[red]x.json").write_text("not json at all", encoding="utf-8")
    run = synix("run", cwd=root)
    return root, run


def test_run_prints_a_bad_file_name_literally(evil_project):
    _, run = evil_project
    assert run.returncode == 1  # one unreadable export file
    assert_safe(run.stdout + run.stderr)
    lines = [l for l in run.stderr.splitlines() if "bad\\x1b[2J[red]x.json" in l]
    assert len(lines) == 1 and lines[0].startswith("error:"), run.stderr


def test_search_shows_titles_and_snippets_literally(evil_project):
    root, _ = evil_project
    for layers in ((), ("--layers", "episodes")):
        out = synix("search", "zebrafish", *layers, cwd=root)
        assert out.returncode == 0, out.stderr
        assert_safe(out.stdout)
        for text in SHOWN:  # the title: in the panel title (episodes) or the provenance tree
            assert text in out.stdout, (text, out.stdout)
    assert "\\x1b[31mred\\x1b[0m" in out.stdout and ":thumbs_up:" in out.stdout


def test_get_lineage_status_runs_and_plan_show_data_literally(evil_project):
    root, _ = evil_project
    hit = json.loads(synix("search", "zebrafish", "--layers", "episodes", "--json",
                           cwd=root).stdout)["hits"][0]
    artifact, episode = hit["sources"][0]["artifact_id"], hit["artifact_id"]
    get = synix("get", artifact, cwd=root)
    lineage = synix("lineage", episode, cwd=root)
    for proc in (get, lineage):
        assert proc.returncode == 0, proc.stderr
        assert_safe(proc.stdout + proc.stderr)
        for text in SHOWN:
            assert text in proc.stdout, (text, proc.stdout)
    for args in (("status",), ("runs",), ("plan",)):
        proc = synix(*args, cwd=root)
        assert_safe(proc.stdout + proc.stderr)
        assert "bad\\x1b[2J[red]x.json" in proc.stdout + proc.stderr or args != ("plan",)


def test_an_error_naming_data_is_one_safe_line(evil_project):
    root, _ = evil_project
    proc = synix("get", "zz\x1b]0;pwned\x07[bold]", cwd=root)
    assert proc.returncode == 1
    assert_safe(proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and "\\x1b]0;pwned\\x07[bold]" in proc.stderr


@pytest.mark.parametrize("raw, shown", [
    ("a\x1b[2Jb", "a\\x1b[2Jb"), ("bell\x07", "bell\\x07"), ("\x9b31m", "\\x9b31m"),
    ("[redacted]", "[redacted]"), ("root:x:0", "root:x:0"), ("line\nbreak", "line\nbreak"),
    ("byte \udcff", "byte \\xff")])
def test_plain_spells_out_what_a_terminal_would_interpret(raw, shown):
    assert plain(raw) == shown
    assert "\n" not in plain(raw, one_line=True)
    assert safe("[redacted]") == "\\[redacted]"
