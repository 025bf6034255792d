"""Parse throughput (MB/s) and peak RSS of `iter_conversations` on a big export or history folder.

    python benchmarks/bench_parse.py                 # generates a 200 MB export in a temp dir
    python benchmarks/bench_parse.py --file conversations.json [--hash]
    python benchmarks/bench_parse.py --format codex-cli --target-mb 80   # a generated history
    python benchmarks/bench_parse.py --format notes --target-mb 80       # a generated notes folder
    python benchmarks/bench_parse.py --format all --target-mb 60         # every format, one by one
    python benchmarks/bench_parse.py --file ~/.codex/sessions            # a real history folder

Formats: chatgpt (generate_exports.py); codex-cli, gemini-cli, claude-code (generate_sessions.py,
history folders laid out as the tools lay theirs out); openwebui, copilot-chat, cursor, notes,
generated from the real samples in ../shared/data (new ids, repeated text): one big Open WebUI
export, and folders of Copilot sessions, SpecStory files and notes.

Each measurement runs in a fresh subprocess, so its `ru_maxrss` (the child rusage that
RUSAGE_CHILDREN reports, read per child with os.wait4) is the parse's own peak, not the
generator's. A bare
import-only child gives the baseline RSS of the interpreter plus the package.
Targets: >= 20 MB/s and peak RSS <= 400 MB. CPU MB/s (the child's own CPU time) is printed too:
on a shared machine the wall-clock rate mostly measures the other processes; the 1-minute load
average is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from generate_exports import generate as generate_export  # noqa: E402 (benchmark-local modules)
from generate_sessions import FORMATS as AGENTS, generate as generate_history  # noqa: E402

TARGET_MBPS = 20.0
TARGET_RSS_MB = 400.0

_CHILD = """
import json, sys, time
from pathlib import Path
from synix_assets.parsers.detect import iter_conversations
from synix_assets.parsers.model import ParseReport
from synix_assets.sources.reader import iter_export_files
path, with_hash = sys.argv[1], sys.argv[2] == "1"
totals = {"conversations": 0, "messages": 0, "bytes": 0, "files": 0, "skipped": 0}
formats = set()  # the tally is kept light: a notes folder is ~2,000 files per MB
start, cpu = time.perf_counter(), time.process_time()
for file in iter_export_files(Path(path)):  # a folder is read as a source reads it, file by file, streamed
    report = ParseReport(path=str(file), format="auto")
    for conversation in iter_conversations(file, report=report, root=path):
        if with_hash:
            conversation.content_hash()
    totals["conversations"] += report.conversations
    totals["messages"] += report.messages
    totals["bytes"] += report.bytes
    totals["files"] += 1
    totals["skipped"] += len(report.skipped)
    formats.add(report.format)
totals["seconds"] = time.perf_counter() - start
totals["cpu_seconds"] = time.process_time() - cpu
totals["formats"] = sorted(formats)
print(json.dumps(totals))
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
    result["cpu_mbps"] = result["mb"] / max(result["cpu_seconds"], 1e-9)
    return result


ALL = ("chatgpt", *AGENTS, *SAMPLES)


def generate(fmt: str, tmp: Path, target: int) -> Path:
    """A generated export file or history/notes folder of `fmt` under `tmp`, ~`target` bytes."""
    started = time.perf_counter()
    if fmt == "chatgpt":
        path = tmp / "chatgpt" / "conversations.json"
        path.parent.mkdir()
        info = generate_export(2000, 24, 7, "chatgpt", path, target)
        print(f"generated {info['bytes'] / 1e6:.0f} MB, {info['conversations']} conversations", file=sys.stderr)
    elif fmt in AGENTS:
        path = tmp / fmt
        info = generate_history(fmt, path, target)
        print(f"generated {info['bytes'] / 1e6:.0f} MB of {fmt} history, {info['files']} session files",
              file=sys.stderr)
    else:
        path = generate_format(fmt, tmp / fmt, target)
    print(f"generated {fmt} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", help="existing export or history folder to parse (default: generate one)")
    parser.add_argument("--format", default="chatgpt", choices=(*ALL, "all"),
                        help="what to generate (default chatgpt; all: every format, one after another)")
    parser.add_argument("--target-mb", type=float, default=200.0)
    parser.add_argument("--hash", action="store_true", help="also time transcript()+content_hash()")
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.file:
            path = Path(args.file).expanduser()
            rows.append(("parse", measure(path, False)))
            if args.hash:
                rows.append(("parse + transcript hash", measure(path, True)))
        for fmt in () if args.file else ALL if args.format == "all" else (args.format,):
            path = generate(fmt, Path(tmp), int(args.target_mb * 1e6))
            rows.append((f"parse {fmt}", measure(path, False)))
            if args.hash:
                rows.append((f"parse {fmt} + transcript hash", measure(path, True)))
            shutil.rmtree(path if path.is_dir() else path.parent)
    _out, baseline = _run_child(_BASELINE)

    print("| run | files | MB | conversations | messages | skipped | seconds | MB/s | CPU MB/s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['files']:,} | {r['mb']:.1f} | {r['conversations']:,} | {r['messages']:,} | "
              f"{r['skipped']:,} | {r['seconds']:.2f} | {r['mbps']:.1f} | {r['cpu_mbps']:.1f} | {r['rss_mb']:.0f} |")
    print(f"| import only (baseline) | | | | | | | | | {baseline:.0f} |")
    ok = all(r["mbps"] >= TARGET_MBPS and r["rss_mb"] <= TARGET_RSS_MB for _, r in rows)
    print(f"\nload average (1, 5, 15 min) at the end: {os.getloadavg()}, {os.cpu_count()} CPUs")
    print(f"targets: >= {TARGET_MBPS:.0f} MB/s, <= {TARGET_RSS_MB:.0f} MB peak RSS: "
          f"{'met' if ok else 'MISSED'}  (python {sys.version.split()[0]}, pid {os.getpid()})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
