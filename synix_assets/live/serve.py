"""Starting `synix serve --home`: checks, the one-line banner, then the server (live/http.py)."""
from __future__ import annotations

import os


def serve_home(home_dir, *, host: str, port: int, token: str | None, allowed_hosts: tuple[str, ...],
               build: bool) -> None:
    from synix_assets.cli.render import console
    from synix_assets.live.home import TenantHome
    from synix_assets.live.http import run_home_server
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
    names = home.names()
    console().print(f"Synix tenants of {home.root} ({len(names)}) at [bold]http://{host}:{port}/v1/tenants/…[/] "
                    f"({'building closed sessions' if build else 'not building'}; Ctrl-C to stop)")
    run_home_server(home, host=host, port=port, allowed_hosts=allowed_hosts, worker=build)
