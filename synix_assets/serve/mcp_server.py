"""`synix mcp`: the memory's tools over the Model Context Protocol (official `mcp` SDK), on
stdio (for agent hosts that spawn it) or streamable HTTP (loopback, behind the guard).

Read-only unless started with `--writes` (`writes=True`): then Syke's five write tools are
listed too, and append_events (the evidence ledger's write). A read-only server does not list them and answers a call to one with a tool error
naming the flag. Arguments are named as `app/vocabulary.py` says: an older spelling it lists
is renamed before the tool runs, and a name the tool does not take is JSON-RPC -32602 (invalid
params) naming what it accepts — never dropped; every listed input schema says
`additionalProperties: false`."""
from __future__ import annotations

import json

from synix_assets.app.memory import MemoryService
from synix_assets.app.vocabulary import WRITE_TOOLS, resolve, served_by
from synix_assets.serve.errors import validation_line
from synix_assets.engine.agent_memory import MemoryWriter
from synix_assets.serve.tools import memory_tools, write_tools
from synix_resources.errors import SynixError, UnknownParameter, WritesNotAllowed

INSTRUCTIONS = ("A Synix memory built from the user's conversations. Call get_memex first, then "
                "search_memories / follow / lineage to navigate, search_transcripts to quote the "
                "source conversations, and search_evidence / browse_timeline for the raw events of "
                "the evidence ledger. Cite record or event ids. list_active_memories, "
                "get_memory_history and follow_links read the memories agents wrote.")
WRITE_INSTRUCTIONS = (" Write what you learn with create_memory (citing source_event_ids: event ids "
                      "from search_evidence, or record ids), update_memory, supersede_memory, "
                      "deactivate_memory and create_link; append_events records new evidence.")
READ_ONLY = " This server is read-only (started without --writes): the write tools are not served."


def _as_tool(fn):
    """Wrap a tool so a Synix failure comes back to the client as a one-line tool error."""
    import functools

    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def tool(*args, **kwargs) -> str:
        try:
            return json.dumps(fn(*args, **kwargs), default=str, ensure_ascii=False)
        except SynixError as exc:
            raise ToolError(exc.one_line()) from exc
    tool.__annotations__ = {**fn.__annotations__, "return": str}
    return tool


def _server_class():
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS
    from pydantic import ValidationError

    capabilities = served_by("mcp")

    class SynixMCPServer(MCPServer):
        writes = False

        async def list_tools(self):
            tools = await super().list_tools()
            for tool in tools:  # what the server refuses, the schema says it refuses
                tool.input_schema = {**tool.input_schema, "additionalProperties": False}
            return tools

        async def call_tool(self, name, arguments, context=None):
            """Older spellings renamed and unknown names refused (-32602) before the SDK
            validates; arguments that fail the tool's schema come back as one line naming
            each argument, not pydantic's multi-line report."""
            if name in WRITE_TOOLS and not self.writes:
                raise ToolError(WritesNotAllowed(
                    f"{name} writes to the memory and this server is read-only",
                    hint="start it with `synix mcp --writes` (docs/doors.md)").one_line())
            if name in capabilities and isinstance(arguments, dict):
                listed = {t.name: t for t in await self.list_tools()}
                takes = listed[name].input_schema.get("properties", {}) if name in listed else None
                try:
                    arguments = resolve(capabilities[name].name, arguments, door="mcp", only=takes)
                except UnknownParameter as exc:
                    raise MCPError(INVALID_PARAMS, f"Invalid params: {exc.one_line()}") from exc
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                    raise
                line = validation_line(exc.__cause__, noun="argument", skip=())
                raise ToolError(f"Error executing tool {name}: {line}") from exc.__cause__

    return SynixMCPServer


def build_server(service: MemoryService, *, writes: bool = False):
    """The MCP server: the read tools, and with `writes` Syke's write tools on the service's
    branch (a read-only server refuses them by name)."""
    from mcp_types import ToolAnnotations

    instructions = INSTRUCTIONS + (WRITE_INSTRUCTIONS if writes else READ_ONLY)
    server = _server_class()("synix-memory", instructions=instructions, log_level="WARNING")
    server.writes = writes
    for fn in memory_tools(service):
        server.add_tool(_as_tool(fn), annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
                        structured_output=False)
    if writes:
        for fn in write_tools(MemoryWriter(service.paths)):
            server.add_tool(_as_tool(fn), structured_output=False, annotations=ToolAnnotations(
                readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False))
    return server


def unavailable_server(problem: str):
    """A server for a host that started `synix mcp` on no usable project: it completes the
    handshake (its instructions name the problem) and answers every tool list or call with an
    MCP error naming it, so the host can show the user why instead of "connection closed"."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR

    message = f"synix mcp has no memory to serve: {problem}"

    class UnavailableServer(_server_class()):
        async def list_tools(self):
            raise MCPError(INTERNAL_ERROR, message)

        async def call_tool(self, name, arguments, context=None):
            raise MCPError(INTERNAL_ERROR, message)

    return UnavailableServer("synix-memory", instructions=message, log_level="WARNING")


def run_stdio(service: MemoryService, *, writes: bool = False) -> None:
    import anyio

    from synix_assets.serve.mcp_stdio import serve_stdio

    try:
        anyio.run(serve_stdio, build_server(service, writes=writes))
    finally:
        service.close()


def run_stdio_unavailable(problem: str) -> None:
    """Serve `unavailable_server` on stdio until the host closes it."""
    import anyio

    from synix_assets.serve.mcp_stdio import serve_stdio

    anyio.run(serve_stdio, unavailable_server(problem))


def run_http(service: MemoryService, *, host: str, port: int, token: str | None = None,
             allowed_hosts: tuple[str, ...] = (), writes: bool = False) -> None:
    """Streamable HTTP at http://host:port/mcp behind the same guard as `synix serve`."""
    from synix_assets.web.guard import GuardPolicy
    from synix_assets.web.serving import make_server, serve_until_stopped

    app = build_server(service, writes=writes).streamable_http_app(host=host)
    policy = GuardPolicy(port=port, bind_host=host, token=token, allowed_hosts=allowed_hosts,
                         json_is_proof=True)
    serve_until_stopped(make_server(app, policy, host=host, port=port), on_stop=service.close)
