"""Every name Synix gives Dagster: run tags, asset tags and metadata keys, job, op, sensor, check,
group and partition-set names. The UI, saved runs, run filters and `dagster job execute -j …`
see these strings, so each is written once, here, and changing one is a visible change.

Plain strings and string functions only: no Dagster import, so the code that launches runs can
name them without loading Dagster.
"""
from __future__ import annotations

# --- run tags (on the Dagster runs Synix launches or requests)
RUN_ID_TAG = "synix/run_id"  # the Synix run a Dagster run belongs to
EMIT_TAG = "synix/emit"  # "changed": only rebuilt partitions get a materialization event
FULL_LAYER_TAG = "synix/full_layer"  # "1": build the whole layer, incl. retiring vanished groups
BATCH_TAG = "synix/batch"  # "1": the build sends its LLM calls as a batch
# "1": a run of a distributed `synix run`, which holds the project lock for all its runs
DISTRIBUTED_TAG = "synix/distributed"
TRIGGER_TAG = "synix/trigger"  # who started the run: one of the TRIGGER_* values below
LAYER_TAG = "synix/layer"  # a layer name, "projections" or "all" (also a job tag)
BRANCH_TAG = "synix/branch"  # the branch built (also a job and asset tag)
OUTCOME_TAG = "synix/outcome"  # on the Dagster runs of a Synix run that did not complete
LIVE_BATCH_TAG = "synix/live_batch"  # the live inbox batch a run builds
BUILD_RUN_TAG = "synix/build_run"  # the synix_build_all run that launched this run
BACKFILL_TAG = "dagster/backfill"  # Dagster's own: the backfill a run belongs to
SENSOR_TAG = "dagster/sensor_name"  # Dagster's own: the sensor that launched a run
# Dagster's own tags saying who launched a run (the UI's "Launched by"): the runs a
# synix_build_all run launches carry its values, so a sensor's build shows the sensor throughout
LAUNCHED_BY_TAGS = ("dagster/sensor_name", "dagster/schedule_name", "dagster/tick", "dagster/user")

# values of TRIGGER_TAG
TRIGGER_CLI = "cli"
TRIGGER_DAGSTER = "dagster"  # a synix_build_all run started from Dagster itself
TRIGGER_EXPORTS_SENSOR = "exports_sensor"
TRIGGER_LIVE_SENSOR = "live_sensor"
TRIGGER_SYNTHESIS_SCHEDULE = "synthesis_schedule"  # the 15-minute synthesis schedule (schedule.py)
TRIGGER_STORE_SYNC = "store_sync"  # materializations recorded from the store, not built
TRIGGER_VERIFIED = "verified"  # partitions re-recorded as current under a new code version

# --- asset tags and metadata keys
LEVEL_KEY = "synix/level"  # a layer's level (asset tag and metadata)
KIND_KEY = "synix/kind"  # a layer's step kind (metadata)
PARTITIONING_KEY = "synix/partitioning"  # a layer's partitioning (metadata)
STATUS_KEY = "synix/status"  # a partition's outcome (materialization metadata)

# --- jobs and ops (a branch other than main prefixes each with "<branch>__", QUALIFIER)
BUILD_ALL = "synix_build_all"
PROJECTIONS_JOB = "synix_update_projections"
LAYER_JOB_PREFIX = "synix_build_"  # + the layer's Dagster name: the per-layer jobs
BUILD_MEMORY_OP = "build_memory"  # the op of synix_build_all
QUALIFIER = "__"  # between a branch slug and a job or partition-set name

# --- the code location Synix's workspace.yaml files name (a project may rename it there)
LOCATION = "synix"
REPOSITORY = "__repository__"  # Dagster's name for the repository of a Definitions object

# --- sensors and checks
EXPORTS_SENSOR = "synix_exports_sensor"
LIVE_SENSOR = "synix_live_sensor"
SYNTHESIS_SCHEDULE = "synix_synthesis_schedule"
API_SENSOR = "synix_api_pull_sensor"  # pulls the api sources (api_sensor.py)
AUTOMATION_SENSOR_PREFIX = "synix_automate_"  # + the asset: one automation sensor per asset
CHECK_NAME = "synix_up_to_date"

# --- asset groups (a branch other than main has one group, BRANCH_GROUP_PREFIX + its slug)
GROUP = "memory"
SOURCES_GROUP = "sources"
BRANCH_GROUP_PREFIX = "branch_"

# --- dynamic partition sets
CONVERSATIONS = "conversations"


def periods_name(layer: str) -> str:
    return f"{layer}_periods"


def topics_name(layer: str) -> str:
    return f"{layer}_topics"
