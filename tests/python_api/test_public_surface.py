"""The public surface of `synix` pinned as reviewed text (tests/python_api/public_surface.txt):
`synix.__all__`, every function's signature, and each public class's bases, `__init__` and
public methods, properties and class attributes (tests/python_api/surface.py writes it).

Any change to what a user's code can call fails here with a unified diff; when it is intended,
rewrite the snapshot with `--update-public-surface` and review its diff in the commit.
"""
from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.python_api.surface import surface

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).resolve().parent / "public_surface.txt"
UPDATE = ("PYTHONPATH=$PWD python -m pytest -p no:cacheprovider "
          "tests/python_api/test_public_surface.py --update-public-surface")


def mismatch(expected: str | None, actual: str) -> str | None:
    """None when `actual` is the reviewed snapshot, else what to tell the developer."""
    shown = SNAPSHOT.relative_to(REPO)
    if expected is None:
        return f"no public-surface snapshot {shown} yet; write it with:\n  {UPDATE}"
    if expected == actual:
        return None
    diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                        fromfile=f"{shown} (reviewed)", tofile="synix now"))
    return (f"the public API of `synix` differs from {shown}:\n{diff}\n"
            f"If the change is intended, rewrite the snapshot and review its diff:\n  {UPDATE}")


def test_public_surface_matches_its_reviewed_snapshot(request):
    actual = surface()
    if request.config.getoption("--update-public-surface"):
        SNAPSHOT.write_text(actual, encoding="utf-8")
        return
    problem = mismatch(SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else None, actual)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_surface_lists_every_public_name_and_the_design_actions():
    text = surface()
    import synix

    for name in synix.__all__:
        assert (f"class {name}(" in text) or (f"def {name}(" in text), name
    for action in ("plan", "sync", "run", "search", "get", "lineage", "branch", "eval", "purge",
                   "stats", "runs", "to_toml"):
        assert f"  Pipeline.{action}(self" in text, action
    assert "  classmethod Pipeline.from_toml(source: str | Path" in text
    assert "  Hit.leaves(self, max_depth: int = 10, max_count: int = 100) -> list[Record]" in text
    assert "  BranchDiff.changed_steps: property -> list[str]" in text
    assert "  PurgeResult.affected_records: property -> list[str]" in text


def test_a_changed_signature_is_reported_as_a_diff_with_the_update_command():
    reviewed = surface()
    changed = reviewed.replace("Hit.leaves(self, max_depth: int = 10,", "Hit.leaves(self, max_depth: int = 5,")
    assert changed != reviewed
    problem = mismatch(reviewed, changed)
    assert problem is not None
    assert "-  Hit.leaves(self, max_depth: int = 10, max_count: int = 100) -> list[Record]" in problem
    assert "+  Hit.leaves(self, max_depth: int = 5, max_count: int = 100) -> list[Record]" in problem
    assert problem.rstrip().endswith(UPDATE)
    assert mismatch(None, reviewed).endswith(UPDATE)
    assert mismatch(reviewed, reviewed) is None


def test_surface_is_the_same_from_another_folder_and_another_process(tmp_path):
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(path)}
    other = subprocess.run([sys.executable, "-c", "from tests.python_api.surface import surface; "
                            "import sys; sys.stdout.write(surface())"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr
    assert other.stdout == surface()
