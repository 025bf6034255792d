"""A partition added by hand (the UI's "Add partition") with nothing behind it is refused by its
run with one line saying why and what to do, never a success that builds and records nothing
(the partition would stay Missing however often it is materialized)."""
from __future__ import annotations

import subprocess

import dagster as dg

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.sources.model import partition_key
from tests.dagster.live import BIN, clean_env

UUID = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a"  # a conversation of the demo exports

MADE_UP = "2099-01-01-nobody-said-this"


def _materialize(defs, instance, layer: str, key: str):
    return dg.materialize(list(defs.assets), selection=[layer_key(layer)], partition_key=key,
                          instance=instance, resources=defs.resources, raise_on_error=False)


def _failure(result) -> str:
    """The step's failure, as the run page shows it (the description of its dg.Failure)."""
    message = next(e for e in result.all_events if e.is_step_failure).event_specific_data.error.message
    assert "\n" not in message.strip()
    return message.strip().removeprefix("dagster._core.definitions.events.Failure: ")


def test_a_conversation_partition_added_by_hand_fails_its_run_with_one_line_and_is_marked_failed(demo_project):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    real = instance.get_dynamic_partitions("conversations")[0]
    instance.add_dynamic_partitions("conversations", [MADE_UP])
    for layer in ("transcripts", "episodes"):
        result = _materialize(defs, instance, layer, MADE_UP)
        assert not result.success
        message = _failure(result)
        assert message.startswith(f"{layer}: nothing to build for partition(s) {MADE_UP}: no conversation")
        assert "Delete partitions" in message
        assert instance.get_status_by_partition(layer_key(layer), [MADE_UP, real], dg.DynamicPartitionsDefinition(
            name="conversations")) == {MADE_UP: dg.AssetPartitionStatus.FAILED,
                                       real: dg.AssetPartitionStatus.MATERIALIZED}
    # a real conversation's partition still just succeeds
    assert _materialize(defs, instance, "episodes", real).success


def test_a_month_added_by_hand_fails_its_run_naming_the_layer_it_waits_for(demo_project):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    instance.add_dynamic_partitions("monthly_periods", ["2099-01"])
    result = _materialize(defs, instance, "monthly", "2099-01")
    assert not result.success
    assert _failure(result).startswith("monthly: nothing to build for partition(s) 2099-01: no partition "
                                       "of episodes in the store falls in it")


def test_a_conversation_whose_transcript_is_not_built_says_to_build_that_first(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    key = partition_key(UUID)  # a conversation of the demo exports, by its export id: nothing built yet
    instance.add_dynamic_partitions("conversations", [key])
    result = _materialize(defs, instance, "episodes", key)
    assert not result.success
    assert _failure(result) == (f"episodes: nothing to build for partition(s) {key} yet: its input "
                                f"transcripts is not built; materialize transcripts for it first (or "
                                f"run synix_build_all)")
    assert _materialize(defs, instance, "transcripts", key).success
    assert _materialize(defs, instance, "episodes", key).success


def test_dagster_asset_materialize_of_a_hand_added_partition_exits_non_zero_with_the_reason(demo_project):
    run_build(demo_project)
    with dagster_instance(demo_project) as instance:
        instance.add_dynamic_partitions("conversations", [MADE_UP])
    out = subprocess.run([str(BIN / "dagster"), "asset", "materialize", "-f", "definitions.py",
                          "--select", "episodes", "--partition", MADE_UP], cwd=demo_project.root,
                         env=clean_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert f"episodes: nothing to build for partition(s) {MADE_UP}: no conversation in the exports" \
        in out.stdout + out.stderr
