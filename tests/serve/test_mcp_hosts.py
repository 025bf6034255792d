"""`synix mcp config HOST` prints what an agent host needs, and the server starts the way a host
starts it: the printed command, arguments and environment only, from `/`, through the official
SDK's stdio client. A host pointed at no project gets an MCP error it can show, not a closed pipe."""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from serve_helpers import synix_cmd

from synix_assets.serve.mcp_hosts import HOSTS


def _config(project: Path, host: str, *extra: str) -> str:
    done = subprocess.run(synix_cmd("mcp", "config", host, "-p", str(project), *extra),
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout


def _launch_spec(host: str, printed: str, name: str = "synix-memory") -> dict:
    """What the host would run, read back from the printed snippet as the host reads it."""
    if host == "claude-code":
        argv = shlex.split(printed)
        assert argv[:4] == ["claude", "mcp", "add", name] and argv[4] == "--", argv
        return {"command": argv[5], "args": argv[6:], "env": {}}
    data = json.loads(printed)
    entry = data["servers" if host == "vscode" else "mcpServers"][name]
    if host == "vscode":
        assert entry["type"] == "stdio"
    return {"command": entry["command"], "args": entry["args"], "env": entry.get("env", {})}


def _host_env(config_env: dict) -> dict:
    # The config's environment only. PYTHONPATH is the harness's, not the config's: it makes a
    # checkout that is not the installed one run its own code, as every subprocess test here does.
    env = dict(config_env)
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


async def _as_host(spec: dict, work):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=spec["command"], args=spec["args"],
                                   env=_host_env(spec["env"]), cwd="/")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await asyncio.wait_for(work(session), 120)


@pytest.mark.parametrize("host", HOSTS)
def test_each_hosts_printed_config_starts_the_memory_from_root(served_project, host):
    printed = _config(served_project.root, host, "--writes")
    spec = _launch_spec(host, printed)
    assert Path(spec["command"]).is_absolute() and os.access(spec["command"], os.X_OK)
    assert spec["args"][-4:] == ["mcp", "-p", str(served_project.root), "--writes"]

    async def work(session):
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool("get_map", {})
        return tools, result

    tools, result = asyncio.run(_as_host(spec, work))
    assert {"get_map", "search_memories", "create_memory"} <= tools
    assert not result.is_error
    assert json.loads(result.content[0].text)["core"][0]["layer"] == "core"


def test_a_config_without_writes_starts_a_read_only_memory(served_project):
    spec = _launch_spec("mcp-json", _config(served_project.root, "mcp-json"))
    assert spec["args"][-3:] == ["mcp", "-p", str(served_project.root)]

    async def work(session):
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        return tools, await session.call_tool("create_memory", {"content": "x"})

    tools, refused = asyncio.run(_as_host(spec, work))
    assert {"get_memex", "search_memories"} <= tools and "create_memory" not in tools
    text = "".join(getattr(c, "text", "") for c in refused.content)
    assert refused.is_error and "read-only" in text and "synix mcp --writes" in text, text


def test_printed_config_names_the_branch_and_server_name_asked_for(served_project):
    printed = _config(served_project.root, "claude-desktop", "--name", "my-mem", "--branch", "main")
    spec = _launch_spec("claude-desktop", printed, name="my-mem")
    assert spec["args"][-5:] == ["mcp", "-p", str(served_project.root), "--branch", "main"]


def test_config_for_no_project_is_one_line_naming_the_fix(tmp_path):
    done = subprocess.run(synix_cmd("mcp", "config", "cursor", "-p", str(tmp_path / "nowhere")),
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode != 0 and not done.stdout
    assert "no pipeline.py in" in done.stderr and "synix init" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("case", ["project_moved", "no_project_argument"])
def test_host_started_on_a_missing_project_gets_an_mcp_error_naming_it(served_project, tmp_path, case):
    from mcp.shared.exceptions import MCPError

    project = tmp_path / "mem"
    shutil.copytree(served_project.root / "exports", project / "exports")
    (project / "pipeline.py").write_text("# placeholder, moved away below\n", encoding="utf-8")
    spec = _launch_spec("mcp-json", _config(project, "mcp-json"))
    shutil.rmtree(project)  # the project moved after the host was configured
    if case == "no_project_argument":
        spec["args"] = ["mcp"]  # a config written by hand without -p: the host's cwd is /
    missing = str(project) if case == "project_moved" else "/"

    async def work(session):
        init = await session.initialize()
        errors = []
        for call in (session.list_tools, lambda: session.call_tool("get_map", {})):
            with pytest.raises(MCPError) as caught:
                await call()
            errors.append(caught.value.message)
        return init.instructions, errors

    instructions, errors = asyncio.run(_as_host(spec, work))
    for text in (instructions, *errors):
        assert f"no pipeline.py in {missing} " in text, text
        assert "synix init" in text and "-p/--project" in text, text
