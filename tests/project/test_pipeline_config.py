"""Issue 40: `pipeline` in `.synix/config.toml` names the script that declares main's pipeline.
A value holding a NUL character, naming a folder, or not a file name at all is one line naming
config.toml, the value and the fix — never an internal error, never "does not exist"."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_assets.app.init import init_project
from synix_assets.cli.main import main
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.project.paths import main_pipeline_file
from synix_resources.errors import PipelineDefinitionError


def _status(root: Path):
    old = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(main, ["status"], catch_exceptions=True)
    finally:
        os.chdir(old)


@pytest.mark.parametrize("line, says", [
    ('pipeline = "memory.py\\u0000x"', "pipeline = 'memory.py\\x00x' holds a NUL character"),
    ('pipeline = "scripts"', "pipeline = 'scripts' names a folder"),
    ("pipeline = 5", "pipeline = 5 is not a file name"),
    ('pipeline = ""', "pipeline = '' is not a file name"),
])
def test_a_bad_pipeline_setting_is_one_line_naming_config_toml_and_the_fix(tmp_path, line, says):
    root = init_project(tmp_path / "p")
    (root / "scripts").mkdir()
    config = root / ".synix" / "config.toml"
    config.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(PipelineDefinitionError) as info:
        main_pipeline_file(root)
    assert info.value.one_line().startswith(f"{config}: {says}")
    result = _status(root)
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == f"error: {info.value.one_line()}"
    assert "internal error" not in result.output and "does not exist" not in result.output


def test_a_good_pipeline_setting_still_names_the_script(tmp_path):
    root = init_project(tmp_path / "p")
    (root / "pipeline.py").rename(root / "memory.py")
    (root / ".synix" / "config.toml").write_text('pipeline = "memory.py"\n', encoding="utf-8")
    assert main_pipeline_file(root) == (root / "memory.py").resolve()


def test_loading_a_folder_as_the_pipeline_file_says_it_is_a_folder(tmp_path):
    with pytest.raises(PipelineDefinitionError, match="is a folder, not a Python file"):
        load_pipeline(tmp_path)
