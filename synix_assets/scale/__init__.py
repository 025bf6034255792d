"""Builds spread over many workers with Dagster's own machinery (docs/scale.md): the project's
`scale.toml` (config.py), the Celery executor and multi-run backfills in the definitions
(executor.py), `synix run` submitting runs to a deployment (launcher.py), and starting a worker
(worker.py)."""
