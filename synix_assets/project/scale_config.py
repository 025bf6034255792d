"""A project's `scale.toml`: where its distributed deployment is (docs/scale.md).

    [dagster]
    webserver = "http://127.0.0.1:3000"   # `synix run` submits its runs here (GraphQL)
    location = "synix"                    # the code location serving this project
    run_timeout_s = 3600                  # a submitted run still unfinished after this fails the build
    exports_sensor = true                 # false: only `synix run` starts builds

    [celery]
    broker = "redis://127.0.0.1:6379/0"
    backend = "redis://127.0.0.1:6379/1"
    partitions_per_run = 100              # BackfillPolicy.multi_run: one run (one step) per chunk
    visibility_timeout_s = 300            # a step whose worker died goes to another worker after this

Without the file a project builds on one machine, as always. With it, the definitions use the
Celery executor and multi-run backfills, and `synix run` launches its layer runs through the
deployment's run queue instead of in its own process (`orchestration/remote.py`).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from synix_resources.errors import PipelineDefinitionError

SCALE_FILE = "scale.toml"


@dataclass(frozen=True)
class ScaleConfig:
    path: Path
    webserver: str
    location: str
    run_timeout_s: float
    broker: str
    backend: str
    partitions_per_run: int
    visibility_timeout_s: int
    exports_sensor: bool = True

    @property
    def host_port(self) -> tuple[str, int]:
        url = urlparse(self.webserver)
        return url.hostname or "127.0.0.1", url.port or (443 if url.scheme == "https" else 80)


def _bad(path: Path, what: str) -> PipelineDefinitionError:
    return PipelineDefinitionError(f"{path}: {what}", hint="see docs/scale.md for the scale.toml format")


def load_scale_config(project_root: Path) -> ScaleConfig | None:
    """The project's scale.toml, or None when it has none (single-machine builds)."""
    path = Path(project_root) / SCALE_FILE
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _bad(path, f"not valid TOML ({exc})") from None
    dagster, celery = data.get("dagster", {}), data.get("celery", {})
    for key, table in (("dagster.webserver", dagster.get("webserver")),
                       ("celery.broker", celery.get("broker"))):
        if not isinstance(table, str) or not table:
            raise _bad(path, f"{key} is missing")
    try:
        config = ScaleConfig(
            path=path, webserver=dagster["webserver"], location=str(dagster.get("location", "synix")),
            run_timeout_s=float(dagster.get("run_timeout_s", 3600)), broker=celery["broker"],
            backend=str(celery.get("backend", celery["broker"])),
            partitions_per_run=int(celery.get("partitions_per_run", 100)),
            visibility_timeout_s=int(celery.get("visibility_timeout_s", 300)),
            exports_sensor=bool(dagster.get("exports_sensor", True)))
    except (TypeError, ValueError) as exc:
        raise _bad(path, f"a value has the wrong type ({exc})") from None
    if config.partitions_per_run < 1 or config.visibility_timeout_s < 1 or config.run_timeout_s <= 0:
        raise _bad(path, "partitions_per_run, visibility_timeout_s and run_timeout_s must be positive")
    return config
