"""The Synix component in a Dagster project made by Dagster's own generator (`create-dagster
project`): `dg` finds it through the `dagster_dg_cli.registry_modules` entry point, `dg scaffold
defs` writes its defs.yaml, pipeline and exports folder, `dg list defs` shows the memory's assets
beside the project's own, `dg check defs` passes, and `dg launch` builds the memory in that
project's Dagster instance, exactly as `synix run` would (`synix plan` then has nothing to do).

Every command runs in this interpreter (`python -c` of the CLIs' own entry functions), which
must hold Synix as installed — with its entry point — and create-dagster: both come with
`pip install -e .[test]`. Without them the end-to-end tests are skipped, and fail under CI=true."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dagster.live import plan_stale

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "synix_assets" / "demo" / "chatgpt_demo.json"
COMPONENT = "synix_assets.component.SynixMemoryComponent"
GROUP = "dagster_dg_cli.registry_modules"
DG = "import sys; from dagster_dg_cli.cli import main; sys.exit(main())"
CREATE_DAGSTER = "import sys; from create_dagster.cli import main; sys.exit(main())"

USER_ASSET = '''import dagster as dg


@dg.asset
def daily_sales() -> int:
    return 42
'''


def _missing() -> str | None:
    if importlib.util.find_spec("create_dagster") is None:
        return "create-dagster is not installed (pip install -e .[test])"
    if "synix_assets.component" not in {e.value for e in importlib.metadata.entry_points(group=GROUP)}:
        return f"Synix's {GROUP} entry point is not installed (pip install -e .)"
    return None


def _require_installed() -> None:
    why = _missing()
    if why and os.environ.get("CI", "").lower() == "true":
        pytest.fail(why)
    if why:
        pytest.skip(why)


def run(code: str, cwd: Path, env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{args}: {(out.stdout + out.stderr)[-3000:]}"
    return out


@pytest.fixture(scope="module")
def dg_project(tmp_path_factory):
    """A fresh `create-dagster` project with a plain asset of its own and a Synix memory
    scaffolded into it, its Dagster home inside it; no LLM configured in the environment."""
    _require_installed()
    base = tmp_path_factory.mktemp("component")
    root = base / "myproj"
    home = root / ".dagster_home"
    env = {k: v for k, v in os.environ.items()
           if k not in ("DAGSTER_HOME", "SYNIX_PROJECT") and not k.startswith("SYNIX_LLM_")
           and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    # no PyPI version check; the project's package imported from its src/ (it is not installed)
    env.update(DAGSTER_DG_UPDATE_CHECK_ENABLED="0",
               PYTHONPATH=os.pathsep.join(p for p in (str(root / "src"), env.get("PYTHONPATH")) if p))
    run(CREATE_DAGSTER, base, env, "project", "--no-uv-sync", "myproj")
    home.mkdir()  # after: Dagster would make it, and the generator refuses an existing folder
    env["DAGSTER_HOME"] = str(home)
    defs = root / "src" / "myproj" / "defs"
    (defs / "sales.py").write_text(USER_ASSET, encoding="utf-8")
    run(DG, root, env, "scaffold", "defs", COMPONENT, "memory")
    memory = defs / "memory"
    # a small export: three conversations of the demo's
    (memory / "exports" / "chat.json").write_text(
        json.dumps(json.loads(DEMO.read_text(encoding="utf-8"))[:3]), encoding="utf-8")
    # the model named in defs.yaml, not in the environment: the component passes it on
    yaml = (memory / "defs.yaml").read_text(encoding="utf-8")
    assert "  # llm_provider: anthropic\n" in yaml, yaml
    (memory / "defs.yaml").write_text(yaml.replace("  # llm_provider: anthropic\n", "  llm_provider: fake\n"),
                                      encoding="utf-8")
    return root, memory, env


def test_the_entry_point_names_the_component_module():
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    modules = set(pyproject["project"]["entry-points"][GROUP].values())
    assert modules == {"synix_assets.component"}
    import synix_assets.component as module

    assert getattr(module, "SynixMemoryComponent").__module__ == "synix_assets.component.memory"


def test_dg_lists_the_component_and_scaffolds_a_memory(dg_project):
    root, memory, env = dg_project
    assert COMPONENT in run(DG, root, env, "list", "components").stdout
    assert {p.name for p in memory.iterdir()} >= {"defs.yaml", "pipeline.py", "exports", ".gitignore"}
    assert f"type: {COMPONENT}" in (memory / "defs.yaml").read_text(encoding="utf-8")
    assert 'pipeline.aggregate("monthly"' in (memory / "pipeline.py").read_text(encoding="utf-8")


def test_dg_list_defs_shows_the_memory_beside_the_projects_own_assets(dg_project):
    root, _, env = dg_project
    listed = json.loads(run(DG, root, env, "list", "defs", "--json").stdout)
    keys = {a["asset_key"] for a in listed["assets"]}
    assert {"daily_sales", "sources/exports", "transcripts", "episodes", "monthly", "core",
            "memory_index", "synix_context"} <= keys, keys
    assert "synix_build_all" in {j["name"] for j in listed["jobs"]}
    assert "synix_exports_sensor" in {s["name"] for s in listed["sensors"]}


def test_dg_check_defs_passes(dg_project):
    root, _, env = dg_project
    out = run(DG, root, env, "check", "defs")
    assert "All definitions loaded successfully" in out.stdout + out.stderr


def test_dg_launch_builds_the_memory_in_the_projects_instance(dg_project):
    import dagster as dg

    root, memory, env = dg_project
    run(DG, root, env, "launch", "--job", "synix_build_all")
    run(DG, root, env, "launch", "--assets", "daily_sales")
    # the store is built, with the fake model defs.yaml named: `synix plan` under it has nothing to do
    assert (memory / ".synix" / "synix.db").is_file()
    assert "Memory of" in (memory / "context.md").read_text(encoding="utf-8")
    assert not any(plan_stale(memory).values()), plan_stale(memory)
    # Dagster's records are in this project's instance: every layer's run, every asset recorded
    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with dg.DagsterInstance.get() as instance:
            runs = {r.job_name: r.status for r in instance.get_runs()}
            assert {"synix_build_all", "synix_build_transcripts", "synix_build_episodes",
                    "synix_build_monthly", "synix_update_projections", "__ASSET_JOB"} <= set(runs), runs
            assert set(runs.values()) == {dg.DagsterRunStatus.SUCCESS}, runs
            # the layer runs the build launched name this project's code location (where its
            # `dg dev` re-executes them), not a Synix project's own
            locations = {r.job_name: r.remote_job_origin.repository_origin.code_location_origin.location_name
                         for r in instance.get_runs() if r.job_name.startswith("synix_")
                         and r.job_name != "synix_build_all"}
            assert set(locations.values()) == {"myproj"}, locations
            for key in ("daily_sales", "transcripts", "episodes", "monthly", "core", "memory_index",
                        "synix_context"):
                assert instance.get_latest_materialization_event(dg.AssetKey(key)) is not None, key
            assert len(instance.get_dynamic_partitions("conversations")) == 3
    finally:
        del os.environ["DAGSTER_HOME"]


def test_a_pipeline_file_of_another_name_becomes_the_projects_pipeline(tmp_path):
    from synix_assets.component.binding import bind_project
    from synix_assets.project import ProjectPaths
    from synix_resources.errors import ProjectNotFound, SynixError

    script = tmp_path / "memory.py"
    script.write_text((REPO / "synix_assets" / "examples" / "monthly.py").read_text(encoding="utf-8"))
    root = bind_project(script, None, None)
    assert root == tmp_path.resolve()
    assert ProjectPaths(root).pipeline_file == script.resolve()
    with pytest.raises(ProjectNotFound, match="does not exist"):
        bind_project(tmp_path / "nope.py", None, None)
    with pytest.raises(SynixError, match="not a PostgreSQL URL"):
        bind_project(script, None, "/tmp/some.db")


def test_the_model_in_defs_yaml_is_a_default_the_environment_overrides(monkeypatch):
    from synix_assets.component import memory

    monkeypatch.delenv("SYNIX_LLM_PROVIDER", raising=False)
    monkeypatch.delenv("SYNIX_LLM_MODEL", raising=False)
    monkeypatch.setattr(memory, "_set_here", {})
    memory._llm_defaults("fake", "fake-v2")
    assert (os.environ["SYNIX_LLM_PROVIDER"], os.environ["SYNIX_LLM_MODEL"]) == ("fake", "fake-v2")
    memory._llm_defaults("extractive", None)  # defs.yaml edited, definitions reloaded
    assert os.environ["SYNIX_LLM_PROVIDER"] == "extractive" and "SYNIX_LLM_MODEL" not in os.environ
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "anthropic")  # the user's own environment
    memory._llm_defaults("fake", None)
    assert os.environ["SYNIX_LLM_PROVIDER"] == "anthropic"


def test_dg_dev_shows_the_memory_assets_beside_the_projects_own(dg_project):
    """What the project's owner sees in `dg dev` once the memory is built: its assets in the
    catalog beside `daily_sales`, materialized (a screenshot for docs/dagster.md)."""
    from tests.dagster.live import DagsterDev, screenshot_page
    from tests.support.screenshots import shot_path

    root, _, env = dg_project
    run(DG, root, env, "launch", "--job", "synix_build_all")  # built (a no-op after the launch test)
    dev = DagsterDev(root, env=env, program="dg").wait_serving()
    try:
        shot = shot_path(root.parent, "dagster-component-assets.png")
        text = screenshot_page(dev.base, "/assets", shot, ["daily_sales", "synix_context"], gone="Loading...")
    finally:
        dev.stop()
    assert all(k in text for k in ("daily_sales", "transcripts", "episodes", "monthly", "core",
                                   "memory_index")), text[:3000]
