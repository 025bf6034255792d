"""`synix mcp`: the memory's read tools over the Model Context Protocol (official `mcp` SDK),
on stdio (for agent hosts that spawn it) or streamable HTTP (loopback, behind the guard)."""
from __future__ import annotations

import json

from synix_assets.app.memory import MemoryService
from synix_assets.serve.errors import validation_line
from synix_assets.engine.agent_memory import MemoryWriter
from synix_assets.serve.tools import memory_tools, write_tools
from synix_resources.errors import SynixError

INSTRUCTIONS = ("A Synix memory built from the user's conversations. Call get_map first, then "
                "search_memories / follow / lineage to navigate, and search_evidence to quote the "
                "source conversations. Cite record ids. Write what you learn with create_memory "
                "(citing evidence record ids), update_memory, supersede_memory, "
                "deactivate_memory and create_link; get_memory_history and follow_links read them.")


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
    from pydantic import ValidationError

    class SynixMCPServer(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            """Arguments that fail the tool's schema come back as one line naming each
            argument, not pydantic's multi-line report."""
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                    raise
                line = validation_line(exc.__cause__, noun="argument", skip=())
                raise ToolError(f"Error executing tool {name}: {line}") from exc.__cause__

    return SynixMCPServer


def build_server(service: MemoryService, *, writes: bool = True):
    """The MCP server: the read tools, and Syke's write tools on the service's branch unless
    `writes` is off."""
    from mcp_types import ToolAnnotations

    server = _server_class()("synix-memory", instructions=INSTRUCTIONS, log_level="WARNING")
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


def run_stdio(service: MemoryService) -> None:
    import anyio

    from synix_assets.serve.mcp_stdio import serve_stdio

    try:
        anyio.run(serve_stdio, build_server(service))
    finally:
        service.close()


def run_stdio_unavailable(problem: str) -> None:
    """Serve `unavailable_server` on stdio until the host closes it."""
    import anyio

    from synix_assets.serve.mcp_stdio import serve_stdio

    anyio.run(serve_stdio, unavailable_server(problem))


def run_http(service: MemoryService, *, host: str, port: int, token: str | None = None,
             allowed_hosts: tuple[str, ...] = ()) -> None:
    """Streamable HTTP at http://host:port/mcp behind the same guard as `synix serve`."""
    from synix_assets.web.guard import GuardPolicy
    from synix_assets.web.serving import make_server, serve_until_stopped

    app = build_server(service).streamable_http_app(host=host)
    policy = GuardPolicy(port=port, bind_host=host, token=token, allowed_hosts=allowed_hosts,
                         json_is_proof=True)
    serve_until_stopped(make_server(app, policy, host=host, port=port), on_stop=service.close)
