"""A throwaway real Redis server (Debian's `redis-server`): a free loopback port, its files in a
tmp dir, no persistence, started and stopped by PID with bounded waits. The Celery broker and the
shared LLM rate limit of the distributed-build tests and of scripts/scale_demo.py."""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.postgres import free_port

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class RedisUnavailable(RuntimeError):
    """Redis cannot be started here; the message says what to install."""


@dataclass
class RedisServer:
    base: Path
    port: int
    process: subprocess.Popen

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        shutil.rmtree(self.base, ignore_errors=True)


def start_redis() -> RedisServer:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable("redis-server not found: install Debian's `redis-server` package "
                               "(apt-get install -y redis-server)")
    base = Path(tempfile.mkdtemp(prefix="synix-redis-"))
    port = free_port()
    log = open(base / "redis.log", "ab")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(base),
         "--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            shutil.rmtree(base, ignore_errors=True)
            raise RedisUnavailable(f"redis-server exited with {proc.returncode} at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return RedisServer(base, port, proc)
        except OSError:
            pass
        time.sleep(0.1)
    server = RedisServer(base, port, proc)
    server.stop()
    raise RedisUnavailable(f"redis-server did not answer on port {port} within {START_TIMEOUT_S:.0f}s")
