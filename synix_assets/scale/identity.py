"""Which worker built an artifact: recorded in its audit (`worker`), so a distributed build shows
how its partitions spread. `SYNIX_WORKER_ID` names the worker (`synix_assets.scale.worker` sets
it to the Celery worker's name; on Kubernetes, the pod name); unset, nothing is recorded."""
from __future__ import annotations

import os

WORKER_ENV = "SYNIX_WORKER_ID"


def worker_id() -> str | None:
    return os.environ.get(WORKER_ENV) or None
