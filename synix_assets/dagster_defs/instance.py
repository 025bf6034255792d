"""The project's Dagster instance: Synix's dagster.yaml and tuned SQLite storage under
`.synix/dagster`. Dagster is imported when it is opened, so importing this module stays cheap."""
from __future__ import annotations

import os

from synix_assets.dagster_defs.vocabulary import CONVERSATIONS
from synix_assets.project import ProjectPaths


def prepare_home(dagster_home) -> None:
    """Synix's dagster.yaml and databases in `dagster_home` (made if new), tuned for this process."""
    from synix_assets.dagster_defs import instance_files, storage

    instance_files.write_instance_yaml(dagster_home)
    storage.create_databases(dagster_home)
    storage.tune(dagster_home)


def dagster_instance(paths: ProjectPaths):
    """The project's instance as Synix's own processes open it: dagster.yaml's storage, without
    compute-log capture for the runs they execute (instance_files.BUILD_YAML)."""
    import dagster as dg

    from synix_assets.dagster_defs import instance_files, storage

    prepare_home(paths.dagster_home)
    os.environ["DAGSTER_HOME"] = str(paths.dagster_home)
    instance = dg.DagsterInstance.from_config(
        str(paths.dagster_home), config_filename=instance_files.write_build_yaml(paths.dagster_home))
    instance.get_dynamic_partitions(CONVERSATIONS)  # creates the databases before we hold them
    storage.tune(paths.dagster_home)
    return instance
