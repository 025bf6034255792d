"""An agent written against design 003 only: Syke's 15 tools by the names and arguments the
design gives them, over stdio with the official `mcp` SDK client, against a real
`synix mcp --writes` started as a host starts it. Nothing here knows Synix's own spellings.

    synix init demo --demo && (cd demo && synix run)
    python scripts/syke_003_session.py demo            # prints each call and its answer (JSON)

It writes agent memories into the project (its memory-ops log): run it on a throwaway copy.
Exit status 0 when every one of the 15 tools answered without an error, 1 otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

# design 003, "15 tools": the only names this agent uses
DESIGN_TOOLS = ("create_memory", "create_link", "update_memory", "supersede_memory",
                "deactivate_memory", "search_memories", "search_evidence", "follow_links",
                "get_memory", "list_active_memories", "get_memory_history", "get_memex",
                "get_recent_memories", "browse_timeline", "cross_reference")


def synix_argv(project: str) -> list[str]:
    here = Path(sys.executable).absolute().parent / "synix"
    command = [str(here)] if here.is_file() else [sys.executable, "-m", "synix_assets.cli"]
    return [*command, "mcp", "-p", str(Path(project).absolute()), "--writes"]


async def session(project: str, env: dict | None = None) -> list[dict]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command, *args = synix_argv(project)
    log: list[dict] = []
    params = StdioServerParameters(command=command, args=args, env=env, cwd="/")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        listed = {t.name for t in (await mcp.list_tools()).tools}
        log.append({"listed": sorted(set(DESIGN_TOOLS) & listed),
                    "missing": sorted(set(DESIGN_TOOLS) - listed)})

        async def call(name: str, **arguments):
            result = await mcp.call_tool(name, arguments)
            text = "".join(getattr(c, "text", "") for c in result.content)
            answer = text if result.is_error else json.loads(text)
            log.append({"call": name, "arguments": arguments, "is_error": result.is_error,
                        "answer": answer})
            return answer

        await call("get_memex")
        evidence = await call("search_evidence", query="marathon")
        event_ids = [event["id"] for event in evidence["events"][:2]]  # 003's events have an id
        goal = await call("create_memory", content="Training for a marathon", source_event_ids=event_ids[:1])
        shoes = await call("create_memory", content="Runs in trail shoes", source_event_ids=event_ids[1:2])
        await call("create_link", source_id=goal["memory_id"], target_id=shoes["memory_id"],
                   reason="the shoes are for the training runs")
        await call("update_memory", memory_id=goal["memory_id"], new_content="Training for a spring marathon")
        newer = await call("supersede_memory", memory_id=shoes["memory_id"], new_content="Runs in road shoes now")
        await call("search_memories", query="marathon")
        await call("follow_links", memory_id=goal["memory_id"])
        await call("get_memory", memory_id=goal["memory_id"])
        await call("list_active_memories", limit=10)
        await call("get_memory_history", memory_id=newer["new_id"])
        await call("get_recent_memories", limit=3)
        await call("browse_timeline", since="2000", before="2100", source=None)
        await call("cross_reference", topic="marathon")
        await call("deactivate_memory", memory_id=newer["new_id"], reason="no longer runs")
    return log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project")
    args = parser.parse_args()
    log = asyncio.run(session(args.project, env=dict(os.environ)))
    print(json.dumps(log, indent=1, ensure_ascii=False, default=str))
    called = {entry["call"] for entry in log if "call" in entry}
    failed = [entry["call"] for entry in log if entry.get("is_error")]
    return 0 if called == set(DESIGN_TOOLS) and not failed and not log[0]["missing"] else 1


if __name__ == "__main__":
    sys.exit(main())
