"""`synix init` says which format it found in each export (or folder) it was given, and
`--format NAME` checks every export is in that format and writes it into pipeline.py — which is
also how an export with no conversations yet (its format cannot be told) is accepted."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "synix_assets" / "demo"


def _synix(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "ANTHROPIC_"))}
    env.update(NO_COLOR="1", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "synix_assets.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_init_prints_the_format_it_detected_for_each_export_and_folder(tmp_path):
    notes = tmp_path / "vault"
    notes.mkdir()
    (notes / "idea.md").write_text("# An idea\n\nWrite the tests first.\n", encoding="utf-8")
    done = _synix("init", "mem", "--from", str(DEMO / "chatgpt_demo.json"),
                  "--from", str(DEMO / "claude_demo.json"), "--from", str(notes), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{DEMO / 'chatgpt_demo.json'}: chatgpt (detected)" in done.stdout
    assert f"{DEMO / 'claude_demo.json'}: claude (detected)" in done.stdout
    assert f"{notes}: notes (detected)" in done.stdout
    as_json = json.loads(_synix("init", "mem2", "--from", str(DEMO / "claude_demo.json"), "--json",
                                cwd=tmp_path).stdout)
    assert as_json["formats"] == {str(DEMO / "claude_demo.json"): "claude"}
    assert 'format="auto"' in (tmp_path / "mem" / "pipeline.py").read_text(encoding="utf-8")


def test_init_format_refuses_an_export_in_another_format_naming_both(tmp_path):
    done = _synix("init", "mem", "--format", "claude", "--from", str(DEMO / "chatgpt_demo.json"),
                  cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    line, = done.stderr.strip().splitlines()
    assert f"{DEMO / 'chatgpt_demo.json'} looks like a chatgpt export, not claude" in line
    assert "--format chatgpt" in line
    assert not (tmp_path / "mem").exists()


def test_init_format_takes_an_empty_export_and_names_the_format_in_pipeline_py(tmp_path):
    empty = tmp_path / "conversations.json"
    empty.write_text("[]", encoding="utf-8")
    refused = _synix("init", "mem", "--from", str(empty), cwd=tmp_path)
    assert refused.returncode != 0 and "synix init --format NAME" in refused.stderr
    done = _synix("init", "mem", "--format", "chatgpt", "--from", str(empty), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{empty}: chatgpt (--format)" in done.stdout
    pipeline = (tmp_path / "mem" / "pipeline.py").read_text(encoding="utf-8")
    assert 'pipeline.source("exports", path="exports", format="chatgpt")' in pipeline
    built = _synix("run", cwd=tmp_path / "mem")
    assert built.returncode == 0, built.stderr
