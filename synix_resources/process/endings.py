"""User code (a pipeline file while it loads, a prompt function while a build renders it) that
tries to end or replace the process: `os._exit(0)` skips every handler and would end `synix run`
with status 0 and nothing built, and exec would replace synix by another program whose status
then stands for the build's. While `kept()` is active in a thread, those calls made from that
thread raise ProcessEnding instead, which the caller turns into its own one-line error (a
definition error naming the file; a failed partition naming the prompt)."""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from types import ModuleType
from typing import Any, Callable, Iterator


class ProcessEnding(BaseException):
    """User code tried to end or replace the process (a BaseException, so the code's own
    `except Exception` cannot swallow it)."""


# os._exit ends the process with the status it is given, skipping every handler; exec replaces
# the program. Every os.exec* goes through execv/execve.
ENDINGS = ("_exit", "execv", "execve")

guarded_threads: dict[tuple[int, int], int] = {}  # (pid, thread) → kept() blocks open there (they nest)
_saved: list[tuple[ModuleType, str, Callable[..., Any]]] = []
_lock = threading.Lock()


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Guard this thread's process-ending calls for the block. Only guarded threads are refused:
    other threads' calls, and those of a child the code forks (multiprocessing ends its children
    with os._exit), go through. Concurrent blocks (a build's threads, a server's loads) share
    one set of guards, removed when the last block ends."""
    key = (os.getpid(), threading.get_ident())
    with _lock:
        if not guarded_threads:
            modules = {os, sys.modules.get(os.name, os)}  # `posix._exit` is os._exit
            _saved[:] = [(m, name, getattr(m, name)) for m in modules for name in ENDINGS if hasattr(m, name)]
            for module, name, real in _saved:
                setattr(module, name, guarded(name, real))
        guarded_threads[key] = guarded_threads.get(key, 0) + 1
    try:
        yield
    finally:
        with _lock:
            guarded_threads[key] -= 1
            if not guarded_threads[key]:
                del guarded_threads[key]
            if not guarded_threads:
                for module, name, real in _saved:
                    setattr(module, name, real)


def guarded(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    """`real` (os.<name>), refused with ProcessEnding in a thread inside kept()."""
    def call(*args: Any, **kwargs: Any) -> Any:
        if (os.getpid(), threading.get_ident()) not in guarded_threads:
            return real(*args, **kwargs)
        shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        raise ProcessEnding(f"os.{name}({shown})")
    return call
