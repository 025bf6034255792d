"""`synix mcp` as a real subprocess fed raw stdio lines: every request line gets exactly one
JSON-RPC answer (parse errors, batches, bad ids, lone surrogates, bad arguments included), a bad
notification gets none, and the server keeps answering after each."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import threading

import pytest
from serve_helpers import synix_cmd

ANSWER_TIMEOUT_S = 30


class StdioPeer:
    """A `synix mcp` process with its stdout read line by line on a thread."""

    def __init__(self, root, log_path):
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(synix_cmd("-p", str(root), "mcp"), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log,
                                     env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"})
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next_ping = 1000

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, raw: bytes) -> None:
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def until_answer(self, answer_id: int, after: bytes) -> list[dict]:
        """Every answer up to the one with `answer_id` (not included)."""
        got = []
        while True:
            try:
                line = self.lines.get(timeout=ANSWER_TIMEOUT_S)
            except queue.Empty:
                raise AssertionError(f"no answer {answer_id} within {ANSWER_TIMEOUT_S} s after "
                                     f"{after[:80]!r}; answers so far {got}") from None
            assert line is not None, f"synix mcp exited after {after[:80]!r}"
            answer = json.loads(line)
            if answer.get("id") == answer_id:
                return got + [answer]
            got.append(answer)

    def answers_before_ping(self, raw: bytes) -> list[dict]:
        """Send `raw`, then a ping; every answer that came before the ping's. The gate answers
        a line it refuses before it reads the next one, so that answer comes first."""
        self.send(raw)
        self._next_ping += 1
        ping = self._next_ping
        self.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
        *got, pong = self.until_answer(ping, raw)
        assert pong.get("result") == {}, pong
        return got

    def call(self, raw: bytes, answer_id: int) -> dict:
        """Send a request the server itself handles; its answer (and no other before it)."""
        self.send(raw)
        answers = self.until_answer(answer_id, raw)
        assert len(answers) == 1, answers
        return answers[0]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self._log.close()


@pytest.fixture(scope="module")
def peer(served_project, tmp_path_factory):
    p = StdioPeer(served_project.root, tmp_path_factory.mktemp("mcp") / "stderr.log")
    try:
        p.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-lines", "version": "1"}}}).encode())
        first = json.loads(p.lines.get(timeout=120))
        assert first["id"] == 1 and "result" in first, first
        p.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield p
    finally:
        p.close()


def call(args_json: str, request_id: int = 7) -> bytes:
    return ('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": '
            '{"name": "search_memories", "arguments": %s}}' % (request_id, args_json)).encode()


@pytest.mark.parametrize("name, raw, answer_id, code, words", [
    ("lone surrogate in an argument", call('{"query": "marathon \\ud800"}'), 7, -32602,
     ["params.arguments.query", "not valid Unicode"]),
    ("lone surrogate in an argument name", call('{"query": "x", "\\udfff": 1}'), 7, -32602,
     ["params.arguments", "not valid Unicode"]),
    ("malformed JSON", b'{"jsonrpc": "2.0", "id": 3, "method": ', None, -32700, ["Parse error"]),
    ("not JSON at all", b"hello there", None, -32700, ["Parse error"]),
    ("invalid UTF-8", b'{"jsonrpc": "2.0", "id": 3, "method": "caf\xe9"}', None, -32700, ["not UTF-8"]),
    ("NaN argument", call('{"query": "x", "limit": NaN}'), None, -32700, ["NaN"]),
    ("a batch", b'[{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}]', None, -32600, ["batch"]),
    ("an empty batch", b"[]", None, -32600, ["batch"]),
    ("id is an object", b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', None, -32600,
     ["id", "object"]),
    ("id is a float", b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', None, -32600, ["id"]),
    ("id is a bool", b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', None, -32600, ["id"]),
    ("id is null", b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', None, -32600, ["id"]),
    ("lone surrogate in the id", b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}', None,
     -32600, ["id", "not valid Unicode", "\\ud800"]),
    ("lone surrogate in the id of a bad request", b'{"jsonrpc": "1.0", "id": "a\\udfff", "method": "x"}', None,
     -32600, ["jsonrpc"]),
    ("no method", b'{"jsonrpc": "2.0", "id": 9}', 9, -32600, ["method"]),
    ("wrong jsonrpc version", b'{"jsonrpc": "1.0", "id": 10, "method": "tools/list"}', 10, -32600,
     ["jsonrpc"]),
    ("params an array", b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": [1]}', 11,
     -32602, ["params"]),
    ("a string message", b'"tools/list"', None, -32600, ["object"]),
])
def test_every_bad_request_line_gets_exactly_one_json_rpc_error_and_the_server_keeps_answering(
        peer, name, raw, answer_id, code, words):
    answers = peer.answers_before_ping(raw)
    assert len(answers) == 1, (name, answers)
    answer = answers[0]
    assert answer["jsonrpc"] == "2.0" and answer["id"] == answer_id, (name, answer)
    assert answer["error"]["code"] == code, (name, answer)
    message = answer["error"]["message"]
    assert "\n" not in message and "Traceback" not in message
    assert all(w in message for w in words), (name, message)


def test_bad_tool_arguments_are_one_tool_error_line_naming_each_argument(peer):
    answer = peer.call(call('{"limit": "many"}', request_id=21), 21)
    assert answer["id"] == 21 and answer["result"]["isError"], answer
    text = answer["result"]["content"][0]["text"]
    assert "\n" not in text and "pydantic" not in text, text
    assert "bad argument query: Field required" in text and "bad argument limit" in text, text


def test_a_bad_notification_or_response_gets_no_answer_and_a_good_call_still_works(peer):
    assert peer.answers_before_ping(
        b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"a": "\\ud800"}}') == []
    assert peer.answers_before_ping(b'{"jsonrpc": "2.0", "id": 5, "result": "not an object"}') == []
    answer = peer.call(call('{"query": "marathon", "limit": 2}', request_id=22), 22)
    assert answer["id"] == 22 and not answer["result"]["isError"], answer
    assert json.loads(answer["result"]["content"][0]["text"])["hits"]
