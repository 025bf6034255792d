"""The forget package takes the build it reruns as an argument (`rebuild=`) instead of importing
the runner, and its raw-byte check starts as a child process without loading the operation."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORGET = REPO / "synix_assets" / "forget"


def _imported_modules(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_no_forget_module_imports_the_runner_anywhere_not_even_inside_a_function():
    offenders = {p.name for p in FORGET.glob("*.py")
                 if any(m.startswith("synix_assets.app.run") for m in _imported_modules(p))}
    assert sorted(p.name for p in FORGET.glob("*.py")) == [
        "__init__.py", "core.py", "dagster.py", "files.py", "journal.py", "phases.py", "plan.py",
        "verify.py"]
    assert offenders == set()


def test_importing_the_forget_operation_does_not_load_the_runner_or_dagster():
    code = ("import sys\nfrom synix_assets.forget import forget, finish_pending_forget\n"
            "print(sorted(m for m in ('synix_assets.app.run', 'dagster') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert json.loads(proc.stdout.replace("'", '"')) == []


def test_the_verify_child_runs_as_a_module_of_the_package_without_warnings(tmp_path):
    (tmp_path / "x.db").write_bytes(b"SQLite format 3\x00" + b"\0" * 100)
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "synix_assets.forget.verify", "sqlite-files"],
        input=json.dumps({"folder": str(tmp_path)}), capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout) == [str(tmp_path / "x.db")]
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, runpy\nsys.argv = ['verify', 'sqlite-files']\n"
         "runpy.run_module('synix_assets.forget.verify', run_name='__main__')\n"
         "print('\\n' + str('synix_assets.forget.core' in sys.modules), file=sys.stderr)"],
        input=json.dumps({"folder": str(tmp_path)}), capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert loaded.stderr.strip().splitlines()[-1] == "False"  # the store and cache stay unloaded
