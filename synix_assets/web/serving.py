"""Run a guarded ASGI app with uvicorn until SIGINT/SIGTERM, shared by `synix ui` and `synix serve`."""
from __future__ import annotations

import signal
import socket
import threading
from contextlib import contextmanager

from synix_assets.web.guard import GuardMiddleware, GuardPolicy


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt so `finally` blocks clean up."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on `host` a moment ago (for internal upstreams and tests)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@contextmanager
def sigterm_raises():
    """While inside, SIGTERM raises `Terminated` in the main thread instead of killing the
    process outright (uvicorn re-raises the signal it caught after its own graceful stop)."""
    def handler(signum, frame):
        raise Terminated()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def make_server(app, policy: GuardPolicy, *, host: str, port: int):
    """A uvicorn server for `app` behind the guard (not started)."""
    import uvicorn

    config = uvicorn.Config(GuardMiddleware(app, policy), host=host, port=port,
                            log_level="warning", access_log=False, lifespan="auto",
                            ws="websockets-sansio", timeout_graceful_shutdown=5)
    return uvicorn.Server(config)


def serve_until_stopped(server, *, on_stop=None) -> None:
    """Run `server` until Ctrl-C or SIGTERM (a clean stop, not an error), then `on_stop()`."""
    with sigterm_raises():
        try:
            server.run()
        except (KeyboardInterrupt, Terminated):
            pass
        finally:
            if on_stop is not None:
                on_stop()


def check_port_free(host: str, port: int) -> None:
    """Raise `ServeError` naming the port when something already listens there."""
    from synix_resources.errors import ServeError

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        # As uvicorn does: a port whose old connections linger in TIME_WAIT is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as err:
            raise ServeError(f"cannot listen on {host}:{port}: {err.strerror or err}",
                             hint="choose another --port, or stop what is using it") from err
