"""`synix mcp` on stdio: every request line gets exactly one JSON-RPC answer.

The SDK's stdio transport hands a line it cannot parse or validate to the server as an
exception, which the server drops: a client that wrote malformed JSON, a batch, an id that is an
object, a float or a bool, or a lone surrogate in its arguments (JSON can spell one as `\\ud800`)
waited forever; a lone surrogate in the id killed the server (the answer echoing it could not
be written), so that id is answered as null. `check_line` reads each line first and answers
those itself — -32700 when the line is not JSON, -32600 when it is not a valid request, -32602
when its params are not — so only lines the SDK's own parser accepts reach it. Notifications and responses never get an answer
(JSON-RPC forbids one); a bad one is logged and dropped.
"""
from __future__ import annotations

import json
import logging
import math
import sys
from typing import Any, AsyncIterator

import anyio
import mcp_types as types
from pydantic import ValidationError

from synix_assets.serve.errors import validation_line
from synix_resources.text import escape_invalid, is_valid_text, walk_json

log = logging.getLogger(__name__)

BATCH_REFUSED = ("Invalid Request: batches are not supported (MCP removed JSON-RPC batching in "
                 "2025-06-18); send one message per line")


class _NotJSON(ValueError):
    """A number JSON has no spelling for (NaN, Infinity, a float past the largest double)."""


def _reject_constant(name: str):
    raise _NotJSON(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJSON(f"the number {text[:20]} is too large")
    return value


def _error(code: int, message: str, request_id: Any = None) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=" ".join(message.split())))


def _kind(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a fraction" if isinstance(value, float) else "an integer"
    return {dict: "an object", list: "an array", str: "a string"}.get(type(value), "null")


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def check_line(raw: bytes) -> tuple[str | None, types.JSONRPCError | None]:
    """One line from the client → (the line to hand to the SDK, None) when it is a message the
    SDK accepts, (None, the answer) for a request that cannot be served, or (None, None) for a
    line that gets no answer (blank, or a bad notification or response)."""
    if not raw.strip():
        return None, None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, _error(types.PARSE_ERROR, f"Parse error: the line is not UTF-8 (byte {err.start})")
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        return None, _error(types.PARSE_ERROR, f"Parse error: {err.msg} at column {err.colno}")
    except RecursionError:
        return None, _error(types.PARSE_ERROR, "Parse error: the JSON is nested too deep")
    except ValueError as err:  # _NotJSON, or an integer past Python's 4,300-digit limit
        reason = str(err) if isinstance(err, _NotJSON) else "an integer has too many digits"
        return None, _error(types.PARSE_ERROR, f"Parse error: {reason}")
    if isinstance(data, list):
        return None, _error(types.INVALID_REQUEST, BATCH_REFUSED)
    if not isinstance(data, dict):
        return None, _error(types.INVALID_REQUEST,
                            f"Invalid Request: a message is a JSON object, not {_kind(data)}")
    if "id" in data and not _valid_id(data["id"]):
        return None, _error(types.INVALID_REQUEST, "Invalid Request: id must be a string or an "
                                                   f"integer, not {_kind(data['id'])}")
    return _check_message(data, text)


def _check_message(data: dict, text: str) -> tuple[str | None, types.JSONRPCError | None]:
    request_id = data.get("id")
    if isinstance(request_id, str) and not is_valid_text(request_id):
        # An answer echoing it could not be written as UTF-8 (the write killed the server); an
        # id that cannot be read back is null in the answer, as JSON-RPC says.
        request_id = None
    is_request = "id" in data and "method" in data
    is_reply = "method" not in data and ("result" in data or "error" in data)

    def refuse(code: int, message: str) -> tuple[None, types.JSONRPCError | None]:
        if "method" in data and "id" not in data or is_reply:
            log.warning("dropped a malformed %s: %s", "response" if is_reply else "notification", message)
            return None, None
        return None, _error(code, message, request_id)

    if data.get("jsonrpc") != "2.0":
        return refuse(types.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if not is_request and not is_reply and "method" not in data:
        return refuse(types.INVALID_REQUEST, "Invalid Request: a request needs a method")
    if "method" in data and not (isinstance(data["method"], str) and is_valid_text(data["method"])):
        return refuse(types.INVALID_REQUEST, "Invalid Request: method must be a string of valid Unicode")
    if "params" in data and not isinstance(data["params"], dict):
        return refuse(types.INVALID_PARAMS, "Invalid params: params must be an object, not "
                                            f"{_kind(data['params'])}")
    for where, value, _ in walk_json(data):
        if isinstance(value, str) and not is_valid_text(value):
            code = types.INVALID_PARAMS if where.startswith("params") else types.INVALID_REQUEST
            return refuse(code, f"Invalid {'params' if code == types.INVALID_PARAMS else 'Request'}: "
                                f"{where} holds text that is not valid Unicode "
                                f"('{escape_invalid(value[:40])}')")
    try:  # exactly what the SDK's transport will run on the line
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        return refuse(types.INVALID_REQUEST, f"Invalid Request: {validation_line(exc, noun='field', skip=())}")
    return text, None


class _Gate:
    """The client's lines as the SDK's stdio transport reads them, minus the ones `check_line`
    answered (written through the transport's own writer, so lines never interleave)."""

    def __init__(self, lines: AsyncIterator[bytes]):
        self._lines = lines
        self._replies = None
        self._ready = anyio.Event()

    def connect(self, write_stream) -> None:
        self._replies = write_stream
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        from mcp.shared.message import SessionMessage

        await self._ready.wait()
        async for raw in self._lines:
            line, answer = check_line(raw)
            if answer is not None:
                await self._replies.send(SessionMessage(answer))
            elif line is not None:
                yield line


async def serve_stdio(server) -> None:
    """Run an MCPServer over this process's stdin and stdout through the gate."""
    from mcp.server.stdio import stdio_server

    gate = _Gate(anyio.wrap_file(sys.stdin.buffer))
    # stdout stays the SDK's: it moves fd 1 aside so stray prints cannot corrupt the wire.
    async with stdio_server(stdin=gate) as (read_stream, write_stream):
        gate.connect(write_stream)
        # The SDK's own run_stdio_async does exactly this with its ungated transport.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
