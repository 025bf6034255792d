"""Parse throughput (MB/s) and peak RSS of `iter_conversations` on a big ChatGPT export.

    python benchmarks/bench_parse.py                 # generates a 200 MB export in a temp dir
    python benchmarks/bench_parse.py --file conversations.json [--hash]
    python benchmarks/bench_parse.py --format openwebui|copilot-chat|cursor|notes [--target-mb 80]

The issue-33 formats are generated from the real samples in ../shared/data (new ids, repeated
text): one big Open WebUI export, and folders of Copilot sessions, SpecStory files and notes.

Each measurement runs in a fresh subprocess, so its `ru_maxrss` (the child rusage that
RUSAGE_CHILDREN reports, read per child with os.wait4) is the parse's own peak, not the
generator's. A bare
import-only child gives the baseline RSS of the interpreter plus the package.
Targets: >= 20 MB/s and peak RSS <= 400 MB.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET_MBPS = 20.0
TARGET_RSS_MB = 400.0

_CHILD = """
import json, sys, time
from pathlib import Path
from synix_assets.parsers.detect import iter_conversations
from synix_assets.parsers.model import ParseReport
from synix_assets.sources.reader import export_files
path, with_hash = sys.argv[1], sys.argv[2] == "1"
totals = {"conversations": 0, "messages": 0, "bytes": 0}
start = time.perf_counter()
for file in export_files(Path(path)):
    report = ParseReport(path=str(file), format="auto")
    for conversation in iter_conversations(file, report=report, root=path):
        if with_hash:
            conversation.content_hash()
    for key in totals:
        totals[key] += getattr(report, key)
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, **totals}))
"""
_BASELINE = "import synix_assets.parsers.detect"


def _run_child(code: str, *args: str) -> tuple[str, float]:
    """Run code in a fresh interpreter; return (stdout, that child's peak RSS in MB).

    `os.wait4` returns the same `ru_maxrss` that RUSAGE_CHILDREN accumulates, but for this one
    child, so runs do not mask each other (RUSAGE_CHILDREN is a running maximum)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=out)
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"benchmark child failed with exit code {proc.returncode}")
        out.seek(0)
        return out.read().decode(), usage.ru_maxrss / 1024.0  # KB on Linux

DATA = HERE.parent / ".." / "shared" / "data"
SAMPLES = {"openwebui": "openwebui", "copilot-chat": "copilot-chat", "cursor": "cursor",
           "notes": "notes-obsidian"}


def generate_format(fmt: str, out: Path, target: int) -> Path:
    """~`target` bytes of `fmt`: copies of the real samples with fresh ids (one Open WebUI
    export file; a folder of files for the one-conversation-per-file formats)."""
    samples = sorted(p for p in (DATA / SAMPLES[fmt]).iterdir() if p.is_file())
    if not samples:
        raise SystemExit(f"no {fmt} samples in {DATA / SAMPLES[fmt]}")
    out.mkdir(parents=True)
    written, n = 0, 0
    if fmt == "openwebui":
        chat = json.loads(samples[0].read_text(encoding="utf-8"))
        path = out / "chat-export.json"
        with path.open("w", encoding="utf-8") as fh:
            fh.write("[")
            while written < target:
                row = {"id": f"row-{n}", "user_id": "u", "title": f"chat {n}", "chat": chat,
                       "created_at": 1744577557 + n, "updated_at": 1744577557 + n}
                text = ("," if n else "") + json.dumps(row)
                fh.write(text)
                written, n = written + len(text), n + 1
            fh.write("]")
        return out
    while written < target:
        for sample in samples:
            data = sample.read_bytes()
            if fmt == "copilot-chat":
                data = data.replace(b'"sessionId": "', f'"sessionId": "{n}-'.encode())
                data = data.replace(b'"requestId": "', f'"requestId": "{n}-'.encode())
            elif fmt == "cursor":
                data = data.replace(b" Session ", f" Session {n}-".encode(), 1)
            # Copilot sessions sit side by side; notes and SpecStory files also in subfolders
            target_file = out / (f"{n}-{sample.name}" if fmt == "copilot-chat" else f"{n // 1000}/{n}-{sample.name}")
            target_file.parent.mkdir(exist_ok=True)
            target_file.write_bytes(data)
            written, n = written + len(data), n + 1
    return out


def measure(path: Path, with_hash: bool) -> dict:
    out, rss = _run_child(_CHILD, str(path), "1" if with_hash else "0")
    result = json.loads(out)
    result["rss_mb"] = rss
    result["mb"] = result["bytes"] / 1e6
    result["mbps"] = result["mb"] / result["seconds"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", help="existing export to parse (default: generate one)")
    parser.add_argument("--target-mb", type=float, default=200.0)
    parser.add_argument("--hash", action="store_true", help="also time transcript()+content_hash()")
    parser.add_argument("--format", default="chatgpt", choices=("chatgpt", *SAMPLES),
                        help="what to generate (default chatgpt)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        if args.file:
            path = Path(args.file)
        elif args.format != "chatgpt":
            started = time.perf_counter()
            path = generate_format(args.format, Path(tmp) / args.format, int(args.target_mb * 1e6))
            print(f"generated {args.format} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        else:
            sys.path.insert(0, str(HERE))
            from generate_exports import generate  # noqa: E402 (benchmark-local module)
            path = Path(tmp) / "conversations.json"
            started = time.perf_counter()
            info = generate(2000, 24, 7, "chatgpt", path, int(args.target_mb * 1e6))
            print(f"generated {info['bytes'] / 1e6:.0f} MB, {info['conversations']} conversations "
                  f"in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        rows = [("parse", measure(path, False))]
        if args.hash:
            rows.append(("parse + transcript hash", measure(path, True)))
    _out, baseline = _run_child(_BASELINE)

    print("| run | file MB | conversations | messages | seconds | MB/s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['mb']:.1f} | {r['conversations']:,} | {r['messages']:,} | "
              f"{r['seconds']:.2f} | {r['mbps']:.1f} | {r['rss_mb']:.0f} |")
    print(f"| import only (baseline) | | | | | | {baseline:.0f} |")
    ok = all(r["mbps"] >= TARGET_MBPS and r["rss_mb"] <= TARGET_RSS_MB for _, r in rows)
    print(f"\ntargets: >= {TARGET_MBPS:.0f} MB/s, <= {TARGET_RSS_MB:.0f} MB peak RSS: "
          f"{'met' if ok else 'MISSED'}  (python {sys.version.split()[0]}, pid {os.getpid()})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
