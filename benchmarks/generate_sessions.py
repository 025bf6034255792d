"""Seeded synthetic coding-agent history folders for the parse benchmark: Codex CLI rollouts
(`YYYY/MM/DD/rollout-*.jsonl`), Gemini CLI recordings (`<hash>/chats/session-*.json`) or Claude
Code sessions (`<project>/<session>.jsonl`), shaped as export-formats.md §5–§7 describes them:
tool calls with outputs of a few kB (what dominates real files), encrypted reasoning, token
counts, a 20 kB system prompt per Codex session.

    python benchmarks/generate_sessions.py --format codex-cli --target-mb 60 --out DIR
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_exports import TOPICS, TextPool, _turns, _uid  # noqa: E402

FORMATS = ("codex-cli", "gemini-cli", "claude-code")
_T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _output(rng: random.Random, pool: TextPool, topic: str) -> str:
    return "\n".join(rng.choices(pool.assistant[topic], k=rng.randint(10, 40)))


def _codex(rng, pool, topic, sid, t) -> tuple[str, bytes]:
    lines = []

    def add(kind, payload):
        nonlocal t
        t += timedelta(milliseconds=rng.randint(50, 4000))
        lines.append(json.dumps({"timestamp": _iso(t), "type": kind, "payload": payload}))
    add("session_meta", {"id": sid, "timestamp": _iso(t), "cwd": f"/home/u/{topic}", "originator": "codex_cli_rs",
                         "cli_version": "0.125.0", "source": "cli", "model_provider": "openai",
                         "base_instructions": {"text": "You are Codex. " * 1500},
                         "git": {"commit_hash": "0" * 40, "branch": "main", "repository_url": f"git@x:{topic}.git"}})
    for user, answer in _turns(rng, pool, topic):
        add("turn_context", {"cwd": f"/home/u/{topic}", "model": "gpt-5.5", "approval_policy": "never"})
        add("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]})
        add("event_msg", {"type": "user_message", "message": user, "images": []})
        for _ in range(rng.randint(1, 4)):
            call = f"call_{_uid(rng)[:20]}"
            add("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAA" + "x" * 1200})
            add("response_item", {"type": "function_call", "name": "exec_command", "call_id": call,
                                  "arguments": json.dumps({"cmd": f"rg -n '{topic}' src", "yield_time_ms": 1000})})
            add("response_item", {"type": "function_call_output", "call_id": call, "output":
                                  "Chunk ID: ab12\nWall time: 0.1 seconds\nProcess exited with code 0\n"
                                  "Original token count: 900\nOutput:\n" + _output(rng, pool, topic)})
            add("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 7000}}})
        add("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]})
        add("event_msg", {"type": "agent_message", "message": answer})
    name = f"{t:%Y/%m/%d}/rollout-{t:%Y-%m-%dT%H-%M-%S}-{sid}.jsonl"
    return name, ("\n".join(lines) + "\n").encode()


def _gemini(rng, pool, topic, sid, t) -> tuple[str, bytes]:
    messages, start = [], t
    for user, answer in _turns(rng, pool, topic):
        t += timedelta(seconds=rng.randint(5, 90))
        messages.append({"id": _uid(rng), "timestamp": _iso(t), "type": "user", "content": user})
        for _ in range(rng.randint(1, 4)):
            t += timedelta(seconds=2)
            cid = f"read_file-{int(t.timestamp() * 1000)}-{_uid(rng)[:12]}"
            messages.append({"id": _uid(rng), "timestamp": _iso(t), "type": "gemini", "content": "",
                             "thoughts": [{"subject": "Reading", "description": rng.choice(pool.assistant[topic]),
                                           "timestamp": _iso(t)}],
                             "tokens": {"input": 3000, "output": 50, "cached": 0, "thoughts": 80, "tool": 0, "total": 3130},
                             "model": "gemini-3-pro", "toolCalls": [{
                                 "id": cid, "name": "read_file", "args": {"file_path": f"/p/{topic}.md"},
                                 "result": [{"functionResponse": {"id": cid, "name": "read_file",
                                                                  "response": {"output": _output(rng, pool, topic)}}}],
                                 "status": "success", "timestamp": _iso(t), "displayName": "ReadFile"}]})
        messages.append({"id": _uid(rng), "timestamp": _iso(t), "type": "gemini", "content": answer,
                         "model": "gemini-3-pro"})
    session = {"sessionId": sid, "projectHash": "f" * 64, "startTime": _iso(start), "lastUpdated": _iso(t),
               "messages": messages}
    name = f"{topic}/chats/session-{start:%Y-%m-%dT%H-%M}-{sid[:8]}.json"
    return name, json.dumps(session, indent=2).encode()


def _claude_code(rng, pool, topic, sid, t) -> tuple[str, bytes]:
    lines, parent = [], None

    def add(kind, content, **extra):
        nonlocal t, parent
        t += timedelta(milliseconds=rng.randint(50, 4000))
        uid = _uid(rng)
        message = {"role": "user" if kind == "user" else "assistant", "content": content}
        lines.append(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                                 "cwd": f"/home/u/{topic}", "sessionId": sid, "version": "2.1.7",
                                 "gitBranch": "main", "type": kind, "message": message, "uuid": uid,
                                 "timestamp": _iso(t), **extra}))
        parent = uid
    for user, answer in _turns(rng, pool, topic):
        add("user", user)
        for _ in range(rng.randint(1, 4)):
            tid = f"toolu_{_uid(rng)[:20]}"
            add("assistant", [{"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/p/{topic}"}}])
            out = _output(rng, pool, topic)
            add("user", [{"type": "tool_result", "tool_use_id": tid, "content": out}],
                toolUseResult={"type": "text", "file": {"filePath": f"/p/{topic}", "content": out}})
        add("assistant", [{"type": "text", "text": answer}])
    return f"-home-u-{topic}/{sid}.jsonl", ("\n".join(lines) + "\n").encode()


_MAKERS = {"codex-cli": _codex, "gemini-cli": _gemini, "claude-code": _claude_code}


def generate(fmt: str, out: Path, target_bytes: int, seed: int = 7) -> dict:
    """Write session files under `out` until they reach `target_bytes`; return counts."""
    rng = random.Random(seed)
    pool = TextPool(rng)
    topics, written, files, t = list(TOPICS), 0, 0, _T0
    while written < target_bytes:
        t += timedelta(hours=rng.randint(1, 30))
        name, data = _MAKERS[fmt](rng, pool, rng.choice(topics), _uid(rng), t)
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written, files = written + len(data), files + 1
    return {"path": str(out), "files": files, "bytes": written}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=FORMATS, required=True)
    parser.add_argument("--target-mb", type=float, default=60.0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    print(json.dumps(generate(args.format, Path(args.out), int(args.target_mb * 1e6))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
