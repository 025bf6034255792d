"""The `corpus` marker, end to end: pytest run in a real subprocess over a checkout made of this
repository's own conftest, tests/support/corpus.py and pyproject.toml, with and without a corpus
folder beside it, with and without CI=true."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

TESTS = '''
import pytest
from tests.support import corpus

@pytest.mark.corpus
def test_marked_reads_the_corpus():
    assert (corpus.DATA / "export.json").read_text() == "[]"

def test_asking_for_the_fixture_marks_it(shared_data):
    assert (shared_data / "export.json").is_file()

@pytest.mark.corpus
@pytest.mark.parametrize("path", sorted(corpus.DATA.glob("*.json")))
def test_parameters_read_from_the_corpus(path):
    assert path.read_text() == "[]"

def test_without_the_corpus():
    assert not hasattr(test_without_the_corpus, "pytestmark")  # unmarked: runs with or without it
'''

SKIPPING = '''
import pytest

@pytest.mark.corpus
def test_a_corpus_test_that_skips_itself():
    pytest.skip("no network here")
'''


def _checkout(tmp_path: Path, with_corpus: bool, tests: str = TESTS) -> Path:
    root = tmp_path / "repo"
    (root / "tests" / "support").mkdir(parents=True)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copy2(REPO / "tests" / "conftest.py", root / "tests" / "conftest.py")
    shutil.copy2(REPO / "tests" / "support" / "corpus.py", root / "tests" / "support" / "corpus.py")
    (root / "tests" / "test_sample.py").write_text(tests)
    if with_corpus:
        (tmp_path / "shared" / "data").mkdir(parents=True)
        (tmp_path / "shared" / "design").mkdir()
        (tmp_path / "shared" / "data" / "export.json").write_text("[]")
    return root


def _pytest(root: Path, *args: str, ci: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONPATH")}
    if ci is not None:
        env["CI"] = ci
    # The checkout's own tests package comes first (cwd); synix itself is not imported there.
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_on_a_clone_alone_corpus_tests_are_skipped_with_one_line_naming_the_corpus(tmp_path):
    proc = _pytest(_checkout(tmp_path, with_corpus=False))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 3 skipped" in proc.stdout
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) == 3 and all("needs the real-data corpus ../shared/data (absent at " in s for s in skips)
    assert "empty parameter set" not in proc.stdout


@pytest.mark.parametrize("args, ci", [((), "true"), (("--require-corpus",), None)], ids=["CI=true", "option"])
def test_where_the_corpus_is_required_a_missing_corpus_fails_every_corpus_test(tmp_path, args, ci):
    proc = _pytest(_checkout(tmp_path, with_corpus=False), *args, ci=ci)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1]
    assert proc.stdout.count("a corpus test was skipped where the corpus is required") >= 3


def test_with_the_corpus_every_corpus_test_runs_under_ci(tmp_path):
    proc = _pytest(_checkout(tmp_path, with_corpus=True), ci="true")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("4 passed")


def test_under_ci_a_corpus_test_that_skips_itself_fails(tmp_path):
    root = _checkout(tmp_path, with_corpus=True, tests=SKIPPING)
    assert _pytest(root).returncode == 0
    proc = _pytest(root, ci="true")
    assert proc.returncode == 1 and "1 failed" in proc.stdout
    assert "where the corpus is required (CI=true or --require-corpus): no network here" in proc.stdout
