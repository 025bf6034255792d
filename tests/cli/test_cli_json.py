"""`--json` is declared and printed in one place (cli/common.py), and each command keeps its own
output form: indented ASCII, indented as written (tenants, ask), or one compact line."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_assets.cli.common import echo_json
from synix_assets.cli.main import main

CLI = Path(__file__).resolve().parents[2] / "synix_assets" / "cli"


def test_echo_json_prints_each_commands_form(capsys):
    data = {"title": "café", "path": Path("/x")}
    echo_json(data)
    assert capsys.readouterr().out == '{\n  "title": "caf\\u00e9",\n  "path": "/x"\n}\n'
    echo_json(data, ascii=False)
    assert capsys.readouterr().out == '{\n  "title": "café",\n  "path": "/x"\n}\n'
    echo_json({"branch": "main"}, indent=None, default=None)
    assert capsys.readouterr().out == '{"branch": "main"}\n'
    with pytest.raises(TypeError):  # without default=str a non-JSON value is a bug, as before
        echo_json(data, default=None)


def test_json_flag_is_declared_only_through_json_option():
    declared = {p.name for p in CLI.rglob("*.py") if '"--json"' in p.read_text(encoding="utf-8")}
    assert declared == {"common.py"}
    for path in CLI.rglob("*.py"):
        assert "json.dumps" not in path.read_text(encoding="utf-8") or path.name == "common.py", path


def test_branch_switch_and_edit_answer_in_one_compact_json_line(tmp_path):
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        runner = CliRunner()
        assert runner.invoke(main, ["init", "p", "--demo"]).exit_code == 0
        os.chdir(tmp_path / "p")
        switched = runner.invoke(main, ["branch", "switch", "main", "--json"])
        edited = runner.invoke(main, ["branch", "edit", "main", "--json"])
    finally:
        os.chdir(old)
    assert switched.exit_code == 0 and switched.stdout == '{"branch": "main"}\n', switched.output
    assert edited.exit_code == 0 and edited.stdout.count("\n") == 1
    assert json.loads(edited.stdout) == {"branch": "main",
                                        "pipeline": str((tmp_path / "p" / "pipeline.py").resolve())}
