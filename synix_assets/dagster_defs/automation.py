"""Declarative automation: what keeps each layer and projection current, as Dagster shows it.

Every Synix asset carries `when_inputs_change()`, and each has its own automation sensor
(`synix_automate_<asset>`, stopped until turned on in the UI's Automation page), so automation
is switched on and off per asset. While any of them runs, the export sensor only observes the
export folders and registers the new conversation and period partitions; the daemon's
evaluation of these conditions then launches the runs, through the same per-layer asset code as
`synix run`, which builds only what Synix's keys say is missing or stale. With every one of
them on, the first run (the root layer's) builds the whole memory as `synix run` does
(assets._leads_build, `automates_all` below). With all of them off (the default) the export
sensor launches `synix_build_all` instead: one run that overlaps the layers (docs/dagster.md).

The condition is Dagster's `eager()` with `~any_deps_missing()` kept only for inputs partitioned
like the asset (an episode waits for its own transcript): a month reads every episode (an
all-partitions mapping), and one conversation whose episode failed must block only its own month
in Synix's plan, not every month forever. A code version change (a prompt edited, after the
definitions reload) requests the layer too.
"""
from __future__ import annotations

import dagster as dg

from synix_assets.dagster_defs.graph import Names
from synix_assets.dagster_defs.vocabulary import AUTOMATION_SENSOR_PREFIX, BRANCH_TAG

MINIMUM_INTERVAL_S = 5


def when_inputs_change(same_partition_inputs: list[dg.AssetKey] = ()) -> dg.AutomationCondition:
    """`same_partition_inputs`: the inputs partitioned like this asset (an episode reads its
    conversation's transcript). Its partition waits until theirs exists: each asset has its own
    sensor, so in one daemon loop the episode's sensor may request a new conversation while the
    transcript's sensor requests its transcript, and that run would find nothing to build; the
    transcript's update then lands before the request counts as handled and is lost with it (seen:
    the new conversation's episode never built)."""
    condition = (
        (dg.AutomationCondition.newly_missing() | dg.AutomationCondition.any_deps_updated()
         | dg.AutomationCondition.code_version_changed()).since_last_handled()
        & ~dg.AutomationCondition.any_deps_in_progress()
        & ~dg.AutomationCondition.in_progress()
    )
    if same_partition_inputs:
        condition = condition & ~dg.AutomationCondition.any_deps_missing().allow(
            dg.AssetSelection.assets(*same_partition_inputs))
    return condition.with_label("when its inputs change (new exports, a rebuilt upstream, an edited prompt)")


def sensor_name(key: dg.AssetKey) -> str:
    return AUTOMATION_SENSOR_PREFIX + "__".join(key.path).replace("/", "_").replace("-", "_")


def automation_sensors(keys: list[dg.AssetKey], names: Names) -> list[dg.AutomationConditionSensorDefinition]:
    """One sensor per asset, so the Automation page turns each on or off on its own."""
    return [dg.AutomationConditionSensorDefinition(
        sensor_name(key), target=[key], minimum_interval_seconds=MINIMUM_INTERVAL_S,
        default_status=dg.DefaultSensorStatus.STOPPED, run_tags={BRANCH_TAG: names.branch},
        description=f"Keeps {key.to_user_string()} current when its inputs change. While any "
                    f"synix_automate_* sensor runs, the export sensor only observes the exports "
                    f"and registers partitions, and these sensors launch the builds.")
        for key in keys]


def automation_on(instance: dg.DagsterInstance) -> bool:
    """Whether a person turned any Synix automation sensor on (in the UI or with
    `dagster sensor start`)."""
    return any(state.name.startswith(AUTOMATION_SENSOR_PREFIX) and state.is_running
               for state in instance.all_instigator_state())


def automates_all(instance: dg.DagsterInstance, keys: set[dg.AssetKey]) -> bool:
    """Whether the automation sensor of every one of `keys` (a branch's layers and projections)
    is running: then a new export's first automation run builds the whole memory (assets.py)."""
    running = {state.name for state in instance.all_instigator_state() if state.is_running}
    return all(sensor_name(key) in running for key in keys)

