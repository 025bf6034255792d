"""Would a process pool parse a large notes folder faster? Serial against a pool, wall and CPU.

    python benchmarks/bench_notes_pool.py --target-mb 20 --workers 2 --repeat 3

A note is independent of every other, so a pool could parse a folder's notes side by side. This
measures the leanest such pool before anything is built on it: the parent walks the folder (the
order the serial walk yields), sends chunks of paths to `multiprocessing` workers (`imap`: results
come back in the chunks' order), each worker parses its notes with `iter_conversations` and
returns them as `marshal`ed tuples (cheaper to send and load than pickled objects), and the
parent rebuilds each `Conversation` and its report. The serial run is the loop bench_parse.py
times. Each run is a fresh interpreter; its figures:

* wall MB/s: bytes of notes over the run's elapsed time, pool start and stop included;
* CPU MB/s: bytes over the CPU time of the parent AND its workers (RUSAGE_SELF + RUSAGE_CHILDREN
  after the pool is joined), the cost of the parse to the machine;
* the parent's and the workers' CPU seconds apart, and the pool's start-up time alone.

The 1-minute load average is printed with each run: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_parse import generate_format  # noqa: E402 (benchmark-local module)

_CHILD = r"""
import collections, json, marshal, multiprocessing, resource, sys, time
from pathlib import Path
from synix_assets.parsers.detect import iter_conversations
from synix_assets.parsers.model import Conversation, Message, ParseReport
from synix_assets.sources.reader import iter_export_files

root, workers, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def parse_chunk(paths):
    out = []
    for path in paths:
        report = ParseReport(path=path, format="auto")
        conversations = [(c.conversation_id, c.title, c.created_at, c.updated_at, c.source_format, c.source_path,
                          [(m.message_id, m.role, m.author, m.created_at, m.text, m.metadata) for m in c.messages],
                          c.metadata) for c in iter_conversations(path, report=report, root=root)]
        out.append((path, report.format, report.bytes, report.conversations, report.messages, report.skipped,
                    conversations))
    return marshal.dumps(out)

def chunks():
    batch = []
    for path in iter_export_files(Path(root)):
        batch.append(str(path))
        if len(batch) == chunk:
            yield batch
            batch = []
    if batch:
        yield batch

def rebuilt(blob):
    for path, fmt, size, convs, msgs, skipped, conversations in marshal.loads(blob):
        report = ParseReport(path=path, format=fmt, conversations=convs, messages=msgs,
                             skipped=[tuple(s) for s in skipped], bytes=size)
        yield report, [Conversation(*c[:6], [Message(*m) for m in c[6]], c[7]) for c in conversations]

if __name__ == "__main__":
    before = resource.getrusage(resource.RUSAGE_SELF)  # the parse's CPU, not the imports'
    start, total, files = time.perf_counter(), 0, 0
    spawn = 0.0
    if workers == 0:
        for path in iter_export_files(Path(root)):
            report = ParseReport(path=str(path), format="auto")
            collections.deque(iter_conversations(path, report=report, root=root), maxlen=0)  # the parse, drained
            total, files = total + report.bytes, files + 1
    else:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            pool.apply(len, ([],))  # a worker is up: the start-up cost alone
            spawn = time.perf_counter() - start
            for blob in pool.imap(parse_chunk, chunks()):
                for report, _conversations in rebuilt(blob):
                    total, files = total + report.bytes, files + 1
            pool.close()
            pool.join()
    wall = time.perf_counter() - start
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"files": files, "bytes": total, "wall": wall, "spawn": spawn,
                      "parent_cpu": me.ru_utime + me.ru_stime - before.ru_utime - before.ru_stime,
                      "workers_cpu": kids.ru_utime + kids.ru_stime}))
"""


def run(folder: Path, workers: int, chunk: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "pool_child.py"  # a file, so the fork workers can find `parse_chunk`
        script.write_text(_CHILD, encoding="utf-8")
        out = subprocess.run([sys.executable, str(script), str(folder), str(workers), str(chunk)],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
    result = json.loads(out)
    result["load"] = os.getloadavg()[0]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target-mb", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--chunk", type=int, default=512, help="notes per task sent to a worker")
    parser.add_argument("--repeat", type=int, default=3, help="serial and pool runs, alternated")
    args = parser.parse_args(argv)
    print("| run | notes | MB | wall s | wall MB/s | CPU MB/s (parent + workers) | parent CPU s | workers CPU s "
          "| pool start s | load (1 min) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = generate_format("notes", Path(tmp) / "notes", int(args.target_mb * 1e6))
        for _ in range(args.repeat):
            for workers in (0, args.workers):
                r = run(folder, workers, args.chunk)
                mb, cpu = r["bytes"] / 1e6, r["parent_cpu"] + r["workers_cpu"]
                name = "serial" if workers == 0 else f"pool of {workers}, {args.chunk} notes a task"
                print(f"| {name} | {r['files']:,} | {mb:.1f} | {r['wall']:.2f} | {mb / r['wall']:.1f} | "
                      f"{mb / cpu:.1f} | {r['parent_cpu']:.2f} | {r['workers_cpu']:.2f} | "
                      f"{r['spawn']:.3f} | {r['load']:.1f} |")
    print(f"\n{os.cpu_count()} CPUs; CPU counted from the start of the walk (imports left out, pool start in)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
