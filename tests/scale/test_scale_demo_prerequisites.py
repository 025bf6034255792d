"""scripts/scale_demo.sh checks what it needs before starting anything: one line naming each
missing piece and its install line; and the `scale` extra carries every Python package the path needs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import scale_demo  # noqa: E402


def _bin_dir_without_redis(tmp_path: Path) -> Path:
    """A PATH with only what scale_demo.sh runs (bash, env, dirname) and this Python: no redis-server."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    python = bin_dir / "python3"  # a wrapper, so the venv (and its packages) is the one used
    python.write_text(f'#!{shutil.which("bash")}\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return bin_dir


def test_demo_without_redis_server_is_one_line_naming_the_install_and_starts_nothing(tmp_path):
    env = {**os.environ, "PATH": str(_bin_dir_without_redis(tmp_path)), "PYTHONPATH": str(REPO),
           "TMPDIR": str(tmp_path)}
    out = subprocess.run([str(REPO / "scripts" / "scale_demo.sh"), "1", "10"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == ["scale_demo: missing redis-server (apt-get install redis-server)"], out.stderr
    assert out.stdout == "" and not list(tmp_path.glob("synix-scale-*"))  # nothing was started


def test_missing_python_packages_and_postgres_are_named_with_their_install_lines(monkeypatch):
    import importlib.util

    from tests.support import postgres

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("psycopg", "dagster_celery") else real(name, *a))
    monkeypatch.setattr(shutil, "which", lambda name, *a: None)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    monkeypatch.delenv("SYNIX_PG_BIN", raising=False)
    assert scale_demo.missing_prerequisites() == [
        "redis-server (apt-get install redis-server)",
        "PostgreSQL's initdb and postgres (apt-get install postgresql, or set SYNIX_PG_BIN to their directory)",
        'psycopg, dagster-celery (pip install -e ".[scale]")',
    ]


def test_this_machine_has_every_prerequisite():
    assert scale_demo.missing_prerequisites() == []


def test_the_scale_extra_carries_psycopg_and_every_package_the_demo_checks():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {req.split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip() for req in extras["scale"]}
    assert {name.split(" ")[0] for name, _ in scale_demo.PYTHON_PREREQUISITES} <= names
    assert "psycopg" in names
