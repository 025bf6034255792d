"""No name is accepted by one interface and refused by another: the same generated name goes
through the CLI (click, in-process), the Python API, the HTTP APIs (ASGI apps through starlette's
client), MCP (the SDK's server calling the tool) and live ingest, and each interface's
accept/refuse must match the one validator of that kind of name (synix_resources/names.py).

An interface "refuses" a name when it answers with that kind's invalid-name error (exception,
one-line CLI error or a 400/tool error naming the rule); anything else — created, found, "no
such branch", "already exists", 403 — means the name itself was accepted.
"""
from __future__ import annotations

import asyncio
import json
import os
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synix_resources import names
from synix_resources.errors import InvalidName, SynixError

CHARS = "aAz09-_.:@/ \n\r\t\x00é%?#\\\u2028"
SPECIAL = ["", ".", "..", "main", "main@previous", "x@previous", "x.lock", "acme\n", "a" * 63, "a" * 64,
           "a" * 80, "a" * 81, "episodes", "-x", "My memory", "p ", "../x", "a/b"]
EXAMPLES = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def candidates(*patterns):
    return st.one_of(st.sampled_from(SPECIAL), st.text(alphabet=CHARS, max_size=10),
                     *(st.from_regex(p, fullmatch=True) for p in patterns))


def refused(check, *args, **kwargs) -> bool:
    try:
        check(*args, **kwargs)
    except InvalidName:
        return True
    except SynixError:  # the name passed; something else about the call did not (e.g. "exists")
        return False
    return False


def segment(name: str) -> str:
    """`name` as one URL path segment (dots too, so no client or server drops a `..`)."""
    return quote(name, safe="").replace(".", "%2E")


def _cli(*args: str):
    from synix_assets.cli.main import main

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _cli_refused(result, *phrases: str) -> bool:
    first = (result.output.strip().splitlines() or [""])[0]
    return result.exit_code == 1 and any(p in first for p in phrases)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A small built project, its memory API and its MCP server."""
    from synix_assets.app.memory import MemoryService
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.serve.app import create_app
    from synix_assets.serve.mcp_server import build_server
    from starlette.testclient import TestClient

    base = tmp_path_factory.mktemp("names")
    saved = {k: os.environ.get(k) for k in ("SYNIX_LLM_PROVIDER", "DAGSTER_HOME")}
    os.environ.update(SYNIX_LLM_PROVIDER="fake", DAGSTER_HOME=str(base / "dagster_home_unused"))
    try:
        paths = ProjectPaths(init_project(base / "mem", exports=demo_exports()[:1]))
        run_build(paths)
        service = MemoryService(paths)
        with TestClient(create_app(service)) as client:
            yield {"paths": paths, "http": client, "mcp": build_server(service)}
        service.close()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A tenants home with tenant `t0` (and its token) and its HTTP app."""
    from synix_assets.app.tenants import TenantHome
    from synix_assets.serve.live_api import HomeApp
    from synix_assets.app.live import TenantServices
    from starlette.testclient import TestClient

    root = tmp_path_factory.mktemp("home")
    tenants = TenantHome(root)
    token = tenants.create("t0")["token"]
    services = TenantServices(TenantHome(root))
    with TestClient(HomeApp(services), base_url="http://127.0.0.1") as client:
        yield {"root": root, "tenants": tenants, "token": token, "http": client}
    services.home.close()
    tenants.close()


# --- branches -------------------------------------------------------------------------------


@EXAMPLES
@given(name=candidates(names.BRANCH.pattern, names.BRANCH.pattern + "@previous"))
def test_a_branch_name_is_accepted_or_refused_alike_by_the_cli_python_http_and_the_store(project, name):
    from synix_assets.pipeline.loader import load_pipeline
    from synix_resources.store.artifact_store import ArtifactStore

    paths = project["paths"]
    expected_new = refused(names.check_branch, name, new=True)
    expected_read = refused(names.check_branch, name)
    invalid = ("invalid branch name", "the name is reserved")
    if "\x00" not in name:  # no OS passes NUL in an argument; the in-process runner can
        created = _cli("-p", str(paths.root), "branch", "create", "--", name)
        assert _cli_refused(created, *invalid) == expected_new, created.output
        read = _cli("status", "-p", str(paths.root), "--branch", name)
        assert _cli_refused(read, "invalid branch name") == expected_read, read.output
    pipeline = load_pipeline(paths.pipeline_file, base_dir=paths.root)
    assert refused(pipeline.branch, name) == expected_new
    answer = project["http"].get("/v1/layers", params={"branch": name})
    assert (answer.status_code == 400 and "invalid branch name" in answer.json()["error"]) == expected_read, \
        answer.text
    store = ArtifactStore(paths.store, read_only=True)
    try:
        assert refused(store.on_branch, name) == expected_read
    finally:
        store.close()
    # whatever was accepted made a folder of exactly that name, inside the branches folder
    if not expected_new and paths.on_branch(name).pipeline_file.exists():
        assert paths.on_branch(name).branch_dir.parent == paths.branches_dir


# --- tenants --------------------------------------------------------------------------------


@EXAMPLES
@given(name=candidates(names.TENANT.pattern))
def test_a_tenant_name_is_accepted_or_refused_alike_by_the_cli_python_and_http(home, name):
    expected = refused(names.check_tenant, name)
    if "\x00" not in name:
        # after `--`, as a shell user passes a name that starts with a dash
        created = _cli("tenant", "create", "--home", str(home["root"]), "--", name)
        assert _cli_refused(created, "tenant name") == expected, created.output
    assert refused(home["tenants"].create, name) == expected
    assert refused(home["tenants"].folder, name) == expected
    if "/" not in name:  # a slash splits the URL path: no HTTP client can send it as one name
        answer = home["http"].get(f"/v1/tenants/{segment(name)}/status",
                                  headers={"Authorization": f"Bearer {home['token']}"})
        body = answer.json()
        assert (answer.status_code == 400 and "tenant name" in body.get("error", "")) == expected, answer.text
    assert not any(refused(names.check_tenant, n) for n in home["tenants"].names())


# --- live session ids ---------------------------------------------------------------------


@EXAMPLES
@given(session=candidates(names.LIVE_ID.pattern))
def test_a_session_id_is_accepted_or_refused_alike_by_ingest_http_and_the_inbox(home, session):
    from synix_resources.live.requests import parse_ingest

    expected = refused(names.check_session_id, session)
    auth = {"Authorization": f"Bearer {home['token']}"}
    body = {"session_id": session, "turns": [{"role": "user", "content": "hello"}]}
    assert refused(parse_ingest, json.dumps(body).encode()) == expected
    answer = home["http"].post("/v1/tenants/t0/ingest", json=body, headers=auth)
    assert (answer.status_code == 400 and "session_id" in answer.json()["error"]) == expected, answer.text
    if session and "/" not in session:  # '' or a slash is no single path segment
        answer = home["http"].get(f"/v1/tenants/t0/sessions/{segment(session)}", headers=auth)
        assert (answer.status_code == 400 and "session_id" in answer.json()["error"]) == expected, answer.text
        answer = home["http"].post(f"/v1/tenants/t0/sessions/{segment(session)}/close", headers=auth)
        assert (answer.status_code == 400 and "session_id" in answer.json()["error"]) == expected, answer.text
    inbox = home["tenants"].inbox("t0")
    try:
        assert refused(inbox.close_session, session) == expected
    finally:
        inbox.close()


# --- layers and projects --------------------------------------------------------------------


@EXAMPLES
@given(name=candidates(names.LAYER.pattern))
def test_a_layer_name_is_accepted_or_refused_alike_by_python_toml_http_and_mcp(project, name):
    from mcp.server.mcpserver.exceptions import ToolError

    from synix_assets.pipeline.api import Pipeline
    from synix_assets.pipeline.toml_io import pipeline_from_toml, pipeline_to_toml

    expected = refused(names.check_layer, name)
    pipeline = Pipeline("p")
    pipeline.source("exports", path="exports")
    pipeline.merge("transcripts", from_=["exports"])
    assert refused(pipeline.merge, name, from_=["transcripts"]) == expected
    text = pipeline_to_toml(pipeline).replace('"transcripts"', json.dumps(name))
    assert refused(pipeline_from_toml, text, cls=Pipeline) == expected
    if name and "/" not in name:  # '' or a slash is no single path segment
        answer = project["http"].get(f"/v1/layers/{segment(name)}")
        assert (answer.status_code == 400 and "layer name" in answer.json()["error"]) == expected, answer.text
    try:
        asyncio.run(project["mcp"].call_tool("list_layer", {"layer": name}))
        mcp_refused = False
    except ToolError as err:
        mcp_refused = "layer name" in str(err)
    assert mcp_refused == expected


@EXAMPLES
@given(name=candidates(names.PROJECT.pattern))
def test_a_project_name_is_accepted_or_refused_alike_by_python_and_toml(name):
    from synix_assets.pipeline.api import Pipeline
    from synix_assets.pipeline.toml_io import pipeline_from_toml, pipeline_to_toml

    expected = refused(names.check_project, name)
    assert refused(Pipeline, name) == expected
    good = Pipeline("p")
    good.source("exports", path="exports")
    text = pipeline_to_toml(good).replace('name = "p"', f"name = {json.dumps(name)}", 1)
    assert refused(pipeline_from_toml, text, cls=Pipeline) == expected
