"""Starting `synix serve --home`: the checks, then the server (serve/live_api.py). The CLI prints
the one-line banner between the two."""
from __future__ import annotations

import os


def open_home(home_dir, *, host: str, port: int, token: str | None):
    """Check the address and open the tenants home; returns the `TenantHome` to serve."""
    from synix_assets.app.tenants import TenantHome
    from synix_assets.web.guard import is_loopback
    from synix_assets.web.serving import check_port_free
    from synix_resources.errors import ServeError

    if not is_loopback(host) or token:
        raise ServeError("`synix serve --home` listens on loopback only and uses each tenant's own token",
                         hint="put a reverse proxy in front and pass --allow-host NAME (docs/serve.md)")
    check_port_free(host, port)
    home = TenantHome(home_dir)
    # Each tenant's build uses that tenant's Dagster home (set per build); an inherited
    # DAGSTER_HOME must never receive another memory's partitions or runs.
    os.environ.pop("DAGSTER_HOME", None)
    return home


def serve_home(home, *, host: str, port: int, allowed_hosts: tuple[str, ...], build: bool) -> None:
    from synix_assets.serve.live_api import run_home_server

    run_home_server(home, host=host, port=port, allowed_hosts=allowed_hosts, worker=build)
