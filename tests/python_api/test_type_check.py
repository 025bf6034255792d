"""The public API's type hints are checked in CI: mypy, as configured in pyproject.toml's
[tool.mypy] (strict over `synix`, synix_assets/python_api and synix_assets/pipeline), must pass,
and a user's script that calls the API correctly type-checks while one that calls it wrongly is
flagged — so the check is known to bite. mypy runs as a subprocess, as a developer runs it
(`python -m mypy` at the repository root), with its cache under pytest's temporary folder."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")


def test_public_api_modules_pass_the_configured_type_check(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    shown = f"`python -m mypy` (pyproject.toml [tool.mypy]) exited {done.returncode}:\n{done.stdout}{done.stderr}"
    assert done.returncode == 0, shown
    assert "Success: no issues found" in done.stdout, shown


USER_SCRIPT_HEAD = '''\
from pathlib import Path

import synix
from synix import EvalResult, Pipeline, PipelineBranch, Record, prompt, template


@prompt(version="1")
def summarize(record: Record) -> str:
    return f"Summarize {record.title}: {record.content}"


def monthly(records: list[Record], group: str) -> str:
    return f"{group}: " + " ".join(r.content for r in records)


pipeline = Pipeline("personal-memory", agent="mark")
pipeline.source("chatgpt", file="exports/conversations.json", format="chatgpt-export")
pipeline.transform("summaries", from_="chatgpt", prompt=summarize)
pipeline.aggregate("monthly", from_="summaries", period="month", prompt=monthly)
pipeline.fold("world-model", from_="monthly", prompt=template("world.txt"))
pipeline.artifact("memory-index", from_=["summaries", "monthly"], surface="search")
'''

CORRECT_USE = USER_SCRIPT_HEAD + '''
plan = pipeline.plan()
cost: float = plan.estimated_cost
steps: list[str] = plan.steps
report = pipeline.run("summaries", full=True)
print(report.to_json())
for hit in pipeline.search("Rust", step="summaries", mode="hybrid"):
    parents: list[Record] = hit.sources()
    leaves: list[Record] = hit.leaves(max_depth=3, max_count=20)
    print(hit.content, hit.score, [leaf.id for leaf in leaves], len(parents))
record = pipeline.get("abc123")
print(record.lineage().walk())
branch: PipelineBranch = pipeline.branch("better-summaries")
branch.transform("summaries", from_="chatgpt", prompt=summarize)
print(branch.plan(full=True).estimated_cost)
branch.run()
changed: list[str] = branch.diff().changed_steps
text_diff: dict[str, object] = branch.diff("abc123")
main_eval: EvalResult = pipeline.eval("locomo", data="locomo.json")
branch_eval = branch.eval("locomo", data=Path("locomo.json"))
if branch_eval > main_eval:
    branch.promote()
print(main_eval.precision_at_5)
affected: list[str] = pipeline.purge("conv-1", dry_run=True).affected_records
runs: list[dict[str, object]] = pipeline.runs()
one_run: dict[str, object] = pipeline.runs("run-1")
pipeline.to_toml("pipeline.toml")
again = Pipeline.from_toml("pipeline.toml")
opened = synix.open("mem")
opened.run(from_="monthly", replay=True)
on_main: Pipeline = synix.open("mem")
on_main.branch("other").run()
loaded: Pipeline = Pipeline.load("mem")
'''

WRONG_USE = USER_SCRIPT_HEAD + '''
pipeline.run(full="yes")
for hit in pipeline.search("Rust"):
    hit.leaves(max_depth="x")
pipeline.purge("conv-1", dry_run=True).affected_record
cost: str = pipeline.plan().estimated_cost
pipeline.transform("summaries", from_="chatgpt", promt=summarize)
synix.open("mem").branch("other").promote(force="no")
'''


PACKAGES = ("synix", "synix_assets", "synix_resources")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The three packages laid out as a wheel installs them (this checkout's files): a type
    checker reads an installed package only where a py.typed marks it, so a user's script sees
    the API's types only if every package the names come from carries one."""
    site = tmp_path_factory.mktemp("site-packages")
    for name in PACKAGES:
        shutil.copytree(REPO / name, site / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return site


def test_every_package_the_public_names_come_from_ships_a_py_typed_marker():
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    for name in PACKAGES:
        assert (REPO / name / "py.typed").is_file(), name
        assert "py.typed" in package_data.get(name, []), f"[tool.setuptools.package-data] {name} lacks py.typed"


def _lines(script: str, tmp_path: Path, cache: Path,
           site: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """mypy --strict on a user's script in a folder of its own, with synix installed."""
    path = tmp_path / "memory.py"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("MYPYPATH", None)
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--strict", str(path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    return done, [line for line in done.stdout.splitlines() if ": error:" in line]


def test_a_user_script_using_the_api_as_documented_type_checks_strictly(tmp_path, mypy_cache, installed):
    done, errors = _lines(CORRECT_USE, tmp_path, mypy_cache, installed)
    assert done.returncode == 0 and not errors, done.stdout + done.stderr


def test_the_readme_python_api_example_type_checks_strictly(tmp_path, mypy_cache, installed):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API\n", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "from synix import Pipeline" in example and "branch.promote()" in example
    done, errors = _lines(example, tmp_path, mypy_cache, installed)
    assert done.returncode == 0 and not errors, done.stdout + done.stderr


def test_a_user_script_using_the_api_wrongly_is_flagged_line_by_line(tmp_path, mypy_cache, installed):
    done, errors = _lines(WRONG_USE, tmp_path, mypy_cache, installed)
    assert done.returncode == 1, done.stdout + done.stderr
    first = USER_SCRIPT_HEAD.count("\n") + 2  # the line of `pipeline.run(full="yes")`
    expected = {
        first: 'Argument "full" to "run" of "Actions" has incompatible type "str"; expected "bool"',
        first + 2: 'Argument "max_depth" to "leaves" of "Hit" has incompatible type "str"; expected "int"',
        first + 3: '"PurgeResult" has no attribute "affected_record"',
        first + 4: 'Incompatible types in assignment (expression has type "float", variable has type "str")',
        first + 5: 'Unexpected keyword argument "promt" for "transform" of "PipelineSpec"',
        first + 6: 'Argument "force" to "promote" of "PipelineBranch" has incompatible type "str"; expected "bool"',
    }
    for line, message in expected.items():
        assert any(e.startswith(f"{tmp_path / 'memory.py'}:{line}: error: {message}") or
                   (f"memory.py:{line}: error: " in e and message in e) for e in errors), \
            f"line {line} not flagged with {message!r}:\n{done.stdout}"
    assert len(errors) == len(expected), done.stdout


def test_the_readmes_editable_install_advice_reports_only_the_users_own_errors(tmp_path, mypy_cache):
    """The README's command for an editable install, as written, on a script outside the
    checkout: the one wrong line of the script is the only error (no flood from the library's
    own modules, which MYPYPATH would bring)."""
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    advice = "`PYTHONPATH=<clone> python -m mypy --strict memory.py`"
    assert advice in readme
    script = USER_SCRIPT_HEAD + "\nwrong: int = pipeline.plan()\n"
    (tmp_path / "memory.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    variable, command = advice.strip("`").split(" ", 1)
    env[variable.split("=")[0]] = str(REPO)  # <clone>
    argv = command.split()
    assert argv[:3] == ["python", "-m", "mypy"]
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(mypy_cache), *argv[3:]],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    line = script.count("\n")
    assert errors == [f"memory.py:{line}: error: Incompatible types in assignment (expression has type "
                      f'"Plan", variable has type "int")  [assignment]'], done.stdout + done.stderr
