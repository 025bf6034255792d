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
    ("import os\nos._exit(0)\n", "called os._exit(0)"),
    ("import posix\nposix._exit(4)\n", "called os._exit(4)"),
    ("import contextlib\nfrom os import _exit\nwith contextlib.suppress(Exception):\n    _exit(0)\n",
     "called os._exit(0)"),
    ("import os\nos.execl('/bin/true', 'true')\n", "called os.execv('/bin/true', ('true',))"),
])
def test_exit_or_interrupt_while_loading_is_a_definition_error_naming_the_file(tmp_path, body, says):
    path = tmp_path / "pipeline.py"
    path.write_text(HEAD + body)
    with pytest.raises(PipelineDefinitionError) as info:
        load_pipeline(path)
    line = info.value.one_line()
    assert f"{path}:{len(HEAD.splitlines()) + body.count(chr(10))}: " in line
    assert says in line and "\n" not in line


@pytest.mark.parametrize("ending", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"])
def test_synix_run_with_an_exiting_pipeline_file_fails_with_the_error(tmp_path, ending):
    from synix_assets.app.init import demo_exports, init_project

    root = init_project(tmp_path / "mem", exports=demo_exports())
    pipeline = root / "pipeline.py"
    pipeline.write_text(pipeline.read_text() + "\n" + ending)
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake"}
    out = subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(root), "run"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {pipeline}:"), out.stderr
    assert ending.splitlines()[-1] in lines[0] and "Traceback" not in out.stderr
    assert not (root / ".synix" / "synix.db").exists()  # nothing was built


def test_process_ending_calls_work_again_after_loading_and_in_other_threads(tmp_path):
    import json
    import threading

    from synix_resources.process import endings

    real_exit, real_execv = os._exit, os.execv
    path = tmp_path / "pipeline.py"
    seen = tmp_path / "seen.json"
    # while the file loads, a thread it starts sees the guard, which lets that thread's calls through
    path.write_text(HEAD + f"""import json, os, threading
from synix_resources.process import endings
seen = {{}}
def look():
    seen["guarded"] = os._exit.__name__ != "_exit"
    seen["passes"] = (os.getpid(), threading.get_ident()) not in endings.guarded_threads
t = threading.Thread(target=look)
t.start(); t.join()
open({str(seen)!r}, "w").write(json.dumps(seen))
""")
    load_pipeline(path)
    assert json.loads(seen.read_text()) == {"guarded": True, "passes": True}
    assert os._exit is real_exit and os.execv is real_execv and not endings.guarded_threads

    calls = []
    guard = endings.guarded("_exit", calls.append)
    worker = threading.Thread(target=lambda: guard(5))
    with endings.kept():
        worker.start()
        worker.join()
        with pytest.raises(endings.ProcessEnding, match=r"os\._exit\(6\)"):
            guard(6)
    assert calls == [5] and os._exit is real_exit
