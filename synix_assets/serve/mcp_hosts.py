"""What an agent host needs to start `synix mcp` for one project: the snippet for its config.

Hosts start the server from their own folder (often `/`) with little of the user's environment,
so every path in a snippet is absolute: the `synix` executable of this installation and the
project folder. Each host wants its own shape (`synix mcp config HOST`, docs/hosts.md).
"""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

HOSTS = ("claude-code", "claude-desktop", "cursor", "vscode", "mcp-json")


def synix_command() -> list[str]:
    """The absolute command that runs this installation's `synix`: the console script next to
    the running Python (a venv's, pipx's, uv's), else that Python with `-m synix_assets.cli`."""
    here = Path(sys.executable).absolute().parent
    for name in ("synix.exe", "synix") if sys.platform == "win32" else ("synix",):
        script = here / name
        if script.is_file():
            return [str(script)]
    return [str(Path(sys.executable).absolute()), "-m", "synix_assets.cli"]


def server_argv(project: Path, branch: str | None = None, *, writes: bool = False) -> list[str]:
    """The full command line a host runs: `synix mcp -p PROJECT [--branch NAME] [--writes]`,
    absolute."""
    argv = [*synix_command(), "mcp", "-p", str(Path(project).absolute())]
    if branch is not None:
        argv += ["--branch", branch]
    if writes:
        argv.append("--writes")
    return argv


def host_config(host: str, project: Path, *, name: str = "synix-memory",
                branch: str | None = None, writes: bool = False) -> str:
    """The text to paste (or run) for `host`: a `claude mcp add` command line for Claude Code,
    else the JSON of the host's config file with one server under `name`."""
    command, *args = server_argv(project, branch, writes=writes)
    if host == "claude-code":
        return shlex.join(["claude", "mcp", "add", name, "--", command, *args])
    entry = {"command": command, "args": args}
    if host == "vscode":  # .vscode/mcp.json: "servers", and each says its transport
        return json.dumps({"servers": {name: {"type": "stdio", **entry}}}, indent=2)
    if host in ("claude-desktop", "cursor", "mcp-json"):
        return json.dumps({"mcpServers": {name: entry}}, indent=2)
    raise ValueError(f"unknown MCP host {host!r}; one of {', '.join(HOSTS)}")
