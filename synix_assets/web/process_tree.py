"""Start a server command in its own process group and stop all of it, verified by PID.

`dagster dev` starts a webserver, a daemon and gRPC code servers. Started in a session of its
own, the whole tree shares one process group: a signal to the group reaches every process, and
none of them is orphaned when the parent is told to stop. Linux (/proc) — what Synix runs on.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgid, state) of a live process, None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its last ")".
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[2]), fields[0]


def descendants(root: int, pgid: int | None = None) -> set[int]:
    """PIDs below `root` (children, grandchildren…), plus every member of process group `pgid`."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                table[int(entry.name)] = st
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    if pgid is not None:
        found |= {pid for pid, (_, group, _) in table.items() if group == pgid}
    found.discard(os.getpid())
    return found


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    st = _stat(pid)
    return st is not None and st[2] != "Z"


def start_group(cmd: list[str], **popen_kwargs) -> subprocess.Popen:
    """Popen in a new session, so the command and everything it starts form one process group."""
    return subprocess.Popen(cmd, start_new_session=True, **popen_kwargs)


def stop_group(proc: subprocess.Popen, *, grace_s: float = 20.0) -> list[int]:
    """Stop `proc` and everything it started: SIGTERM to `proc` (a supervisor such as
    `dagster dev` stops its own children in order — signalling the whole group at once makes
    them wait on each other), then SIGKILL to the group and every PID still alive after
    `grace_s`. Returns the PIDs that were alive."""
    pgid = proc.pid  # start_new_session made it the group leader
    pids = descendants(proc.pid, pgid) | {proc.pid}
    try:
        proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace_s
    orphans_told = False
    while time.monotonic() < deadline:
        proc.poll()  # reap our own child so it does not linger as a zombie
        pids |= {p for p in descendants(proc.pid, pgid)}
        if not any(alive(p) for p in pids):
            break
        if proc.returncode is not None and not orphans_told:
            # the supervisor is gone (a SIGTERM before its own handlers were set): nobody stops
            # what it had started but a signal to the group
            _signal_group(pgid, signal.SIGTERM)
            orphans_told = True
        time.sleep(0.1)
    else:
        _signal_group(pgid, signal.SIGKILL)
        for pid in pids:
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # SIGKILL cannot be ignored; only a stuck kernel lands here
        pass
    return sorted(pids)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
