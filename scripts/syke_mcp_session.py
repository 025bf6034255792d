"""A Syke-style session over MCP, recorded: the official `mcp` SDK client against a real
`synix mcp --transport http` (streamable HTTP at /mcp) on 127.0.0.1, writing and reading agent
memories in a built project, each call printed with its real output.

    synix init demo --demo --template syke && (cd demo && synix run)
    python scripts/syke_mcp_session.py demo [--out session.md]

The session (on the demo exports): search the episodes for evidence, create two memories citing
it, update one, supersede the other (the goal changed), link them, follow the links, walk the
supersession history and read the map. It changes the project's memory (the ops land in its memory-ops log), so run it on
a copy or a throwaway project. The server is stopped by its PID on the way out.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

SYNIX = str(Path(sys.executable).parent / "synix")
STARTUP_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_serving(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"synix mcp exited with {proc.returncode} before serving")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nothing", timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"synix mcp did not answer on port {port} within {STARTUP_S} s")


async def session(port: int) -> list[dict]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    calls: list[dict] = []
    async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_):
        async with ClientSession(read, write) as client:
            await client.initialize()

            async def call(name: str, **args):
                result = await client.call_tool(name, args)
                text = "".join(getattr(c, "text", "") for c in result.content)
                calls.append({"tool": name, "arguments": args, "is_error": result.is_error, "output": text})
                if result.is_error:
                    raise SystemExit(f"{name} failed: {text}")
                return json.loads(text)

            found = await call("search_memories", query="marathon training", layers=["episodes"], limit=2)
            evidence = [hit["artifact_id"] for hit in found["hits"][:2]]
            race = await call("create_memory", content="The user is training for the San Francisco "
                              "Marathon on July 27, aiming for 3:45", evidence=evidence[:1],
                              valid_from="2025-02-10")
            runs = await call("create_memory", content="The user does a long run every Sunday",
                              evidence=evidence[:1], valid_from="2025-02-10")
            await call("update_memory", memory_id=runs["memory_id"],
                       content="The user does a long run every Sunday, building towards 20 miles",
                       evidence=evidence[1:2], valid_from="2025-03-01")
            goal = await call("supersede_memory", memory_id=race["memory_id"],
                              content="The user now aims for 3:55 at the San Francisco Marathon",
                              reason="the goal was relaxed after a calf strain", valid_from="2025-04-15")
            await call("create_link", source_id=runs["memory_id"], target_id=goal["new_id"],
                       reason="the Sunday long runs are the marathon build-up")
            await call("follow_links", memory_id=goal["new_id"])
            await call("get_memory_history", memory_id=goal["new_id"])
            await call("get_map")
    return calls


def markdown(calls: list[dict]) -> str:
    out = []
    for c in calls:
        shown = c["output"]
        try:
            data = json.loads(shown)
            if c["tool"] == "get_map":  # the agent's map; the core and recent records are long
                data = {"map": data.get("map"), "layers": data.get("layers")}
            shown = json.dumps(data, indent=1, ensure_ascii=False)
        except ValueError:  # a tool's plain-text answer (an error line) is shown as it came
            shown = c["output"]
        if len(shown) > 2500:
            shown = shown[:2500] + "\n… (cut here)"
        out += [f"**{c['tool']}** `{json.dumps(c['arguments'], ensure_ascii=False)}`", "", "```json",
                shown, "```", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", help="a built project folder (it is written to)")
    parser.add_argument("--out", help="write the session as markdown here (default: stdout)")
    args = parser.parse_args(argv)
    port = free_port()
    proc = subprocess.Popen([SYNIX, "-p", args.project, "mcp", "--writes", "--transport", "http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_serving(port, proc)
        calls = asyncio.run(session(port))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    text = markdown(calls)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
