"""A pipeline.py that exits or raises KeyboardInterrupt while loading is a definition error naming
the file and line, never a silent exit 0 with nothing built."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from synix_assets.pipeline.loader import load_pipeline
from synix_resources.errors import PipelineDefinitionError

HEAD = '''from synix_assets.pipeline.api import Pipeline
pipeline = Pipeline("p")
pipeline.source("exports", path="exports")
'''


@pytest.mark.parametrize("body,says", [
    ("import sys\nsys.exit(0)\n", "called sys.exit(0)"),
    ("raise SystemExit(3)\n", "called sys.exit(3)"),
    ("raise SystemExit\n", "called sys.exit(None)"),
    ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt"),
])
def test_exit_or_interrupt_while_loading_is_a_definition_error_naming_the_file(tmp_path, body, says):
    path = tmp_path / "pipeline.py"
    path.write_text(HEAD + body)
    with pytest.raises(PipelineDefinitionError) as info:
        load_pipeline(path)
    line = info.value.one_line()
    assert f"{path}:{len(HEAD.splitlines()) + body.count(chr(10))}: " in line
    assert says in line and "\n" not in line


def test_synix_run_with_an_exiting_pipeline_file_fails_with_the_error(tmp_path):
    from synix_assets.scaffold import demo_exports, init_project

    root = init_project(tmp_path / "mem", exports=demo_exports())
    pipeline = root / "pipeline.py"
    pipeline.write_text(pipeline.read_text() + "\nimport sys\nsys.exit(0)\n")
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake"}
    out = subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(root), "run"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "pipeline.py" in out.stderr
    assert "sys.exit(0)" in out.stderr and "Traceback" not in out.stderr
    assert not (root / ".synix" / "synix.db").exists()  # nothing was built
