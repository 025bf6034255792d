#!/usr/bin/env bash
# A distributed Synix build on this machine: scripts/scale_demo.sh WORKERS CONVERSATIONS [options]
# (PostgreSQL + Redis + Dagster + WORKERS Celery workers on loopback, torn down by PID; see
# scripts/scale_demo.py and docs/scale.md). Prints one JSON line last.
set -euo pipefail
exec python3 "$(dirname "$0")/scale_demo.py" "$@"
