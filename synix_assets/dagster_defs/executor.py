"""What a project's scale.toml changes in its Dagster definitions: the Celery executor (every
step a task on the broker, taken by whichever worker is free) and multi-run backfills (a layer's
partitions in chunks of `partitions_per_run`, one run each, so they spread over the workers).
Without scale.toml: Dagster's default executor and one run per layer."""
from __future__ import annotations

from pathlib import Path

import dagster as dg

from synix_assets.project.scale_config import ScaleConfig, load_scale_config


def celery_settings(config: ScaleConfig) -> dict:
    """The celery executor's config, also what every worker is started with (scale/worker.py).

    A task is acknowledged only when its step finished (`task_acks_late`), so the task of a worker
    that dies mid-step goes back to the queue — at once when its pool process is lost, after
    `visibility_timeout_s` when the whole worker is (Redis redelivers unacknowledged tasks then).

    Redis redelivers only when a live worker sweeps for expired tasks. kombu sweeps every
    `unacked_restore_interval` s but scans Redis only on every `unacked_restore_throttle`-th sweep
    (10 s × 10 by default), and a worker that dies inside a sweep holds the sweep's mutex for
    `unacked_mutex_expire` (300 s): a dead worker's step could wait minutes past its visibility
    timeout. Here every sweep scans, a few times per timeout, and the mutex lasts one timeout.
    """
    visibility = config.visibility_timeout_s
    return {"broker": config.broker, "backend": config.backend,
            "config_source": {
                "task_acks_late": True,
                "task_reject_on_worker_lost": True,
                "worker_prefetch_multiplier": 1,
                "broker_transport_options": {
                    "visibility_timeout": visibility,
                    "unacked_restore_interval": max(1, min(10, visibility // 3)),
                    "unacked_restore_throttle": 1,
                    "unacked_mutex_expire": max(5, min(300, visibility)),
                },
                "result_backend_transport_options": {"visibility_timeout": config.visibility_timeout_s},
            }}


def executor_for(project_root: Path) -> dg.ExecutorDefinition | None:
    config = load_scale_config(project_root)
    if config is None:
        return None
    from dagster_celery import celery_executor

    return celery_executor.configured(celery_settings(config), name="synix_celery")


def backfill_policy(project_root: Path) -> dg.BackfillPolicy:
    config = load_scale_config(project_root)
    if config is None:
        return dg.BackfillPolicy.single_run()
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=config.partitions_per_run)


def sensor_running(project_root: Path) -> bool:
    """Whether the export sensor starts running (scale.toml `[dagster] exports_sensor`, default
    on): a deployment whose builds are all started by `synix run` turns it off."""
    config = load_scale_config(project_root)
    return config is None or config.exports_sensor
