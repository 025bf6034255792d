"""Token usage and cost where Dagster users read them: on each materialization whose build called
a model (under the names of Dagster's own LLM integrations), summed on the `synix_build_all`
run's output, and per layer in `synix status`."""
from __future__ import annotations

import os
import time

import io

import dagster as dg
import httpx2
from rich.console import Console

from synix_assets.app.run import run_build
from synix_assets.app.status import project_status
from synix_assets.cli.render.build import status_table
from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.usage import usage_metadata
from synix_assets.sources.model import partition_key
from synix_resources.llm import resource
from synix_resources.llm.anthropic_client import AnthropicClient
from synix_resources.llm.pricing import estimate_cost
from synix_resources.store.artifact_store import ArtifactStore

UUID = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a"
READABLE = "2025-01-06-rust-cli-for-dotfile-sync"
USAGE = ("fake.calls", "fake.input_tokens", "fake.output_tokens", "fake.cost_usd")


def _materialize(defs, instance, *layers):
    result = dg.materialize(list(defs.assets), selection=[layer_key(n) for n in layers],
                            partition_key=READABLE, instance=instance, resources=defs.resources)
    assert result.success


def _register_conversations(defs, instance, project):
    """The export sensor's tick: the conversations' partitions, under their readable keys."""
    for f in (project.root / "exports").iterdir():  # settled: older than the settle time
        os.utime(f, (time.time() - 60, time.time() - 60))
    with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
        defs.sensors[0](ctx)


def _latest(instance, layer):
    return instance.get_latest_materialization_event(layer_key(layer)).asset_materialization.metadata


def test_a_partition_built_by_a_model_records_its_calls_tokens_and_cost_under_the_providers_names(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _register_conversations(defs, instance, demo_project)
    _materialize(defs, instance, "transcripts", "episodes")
    md = _latest(instance, "episodes")
    audit = ArtifactStore(demo_project.store).audit(
        ArtifactStore(demo_project.store).current("episodes", partition_key(UUID)).artifact_id)
    assert md["fake.calls"].value == 1
    assert md["fake.input_tokens"].value == audit["input_tokens"] > 0
    assert md["fake.output_tokens"].value == audit["output_tokens"] > 0
    assert md["fake.cost_usd"].value == audit["cost_usd"]  # the fake model is priced at $0
    assert not set(USAGE) & set(_latest(instance, "transcripts"))  # no model behind a transcript
    _materialize(defs, instance, "episodes")  # current already: recorded again, nothing called
    again = _latest(instance, "episodes")
    assert again["cache"].value == "hit" and not set(USAGE) & set(again)


def test_the_build_all_run_records_the_whole_builds_usage_per_layer_and_in_total(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    result = defs.resolve_job_def("synix_build_all").execute_in_process(instance=instance)
    assert result.success
    output = next(e for e in result.all_events if e.event_type_value == "STEP_OUTPUT")
    md = output.step_output_data.metadata
    run = ArtifactStore(demo_project.store).list_runs(limit=1)[0]
    layers = run.stats["layers"]
    assert md["fake.calls"].value == sum(v["llm_calls"] for v in layers.values()) == 24 + 6 + 6
    assert md["fake.input_tokens"].value == sum(v["tokens_in"] for v in layers.values()) > 0
    assert md["fake.output_tokens"].value == sum(v["tokens_out"] for v in layers.values()) > 0
    by_layer = md["usage_by_layer"].value
    assert by_layer["episodes"]["fake.calls"] == 24 and by_layer["transcripts"] == {}
    # each partition's materialization carries its own share: they add up to the run's sum
    events = instance.fetch_materializations(layer_key("episodes"), limit=100).records
    assert sum(e.asset_materialization.metadata["fake.input_tokens"].value for e in events) \
        == by_layer["episodes"]["fake.input_tokens"]


def test_an_openai_compatible_model_is_counted_as_dagster_openai_counts_and_no_model_records_nothing():
    assert usage_metadata("openai-compatible", 2, 100, 30, 0.5) == {
        "openai.calls": 2, "openai.prompt_tokens": 100, "openai.completion_tokens": 30,
        "openai.total_tokens": 130, "openai.cost_usd": 0.5}
    assert usage_metadata("anthropic", 1, 10, 3, 0.25) == {
        "anthropic.calls": 1, "anthropic.input_tokens": 10, "anthropic.output_tokens": 3,
        "anthropic.cost_usd": 0.25}
    assert usage_metadata("extractive", 1, 0, 0, 0.0) == {}  # sentence selection, not a model
    assert usage_metadata("anthropic", 0, 10, 3, 0.0) == {}  # every answer from the response cache


def test_status_sums_each_layers_calls_tokens_and_cost_over_every_build(demo_project, claude_export, conversation):
    first = run_build(demo_project)
    claude_export(demo_project.root / "exports" / "more.json",
                  [conversation("more-one", "Sourdough starter", "2025-03-04", "sourdough hydration")])
    second = run_build(demo_project)
    status = project_status(demo_project)
    episodes = status["layers"]["episodes"]["spent"]
    assert episodes["llm_calls"] == 24 + 1
    assert episodes["tokens_in"] == first.layers["episodes"]["tokens_in"] + second.layers["episodes"]["tokens_in"]
    assert status["layers"]["transcripts"]["spent"]["llm_calls"] == 0
    assert status["spent"]["llm_calls"] == int(first.total("llm_calls") + second.total("llm_calls"))
    assert status["spent"]["tokens_out"] == int(first.total("tokens_out") + second.total("tokens_out"))
    out = Console(file=io.StringIO(), width=100)
    status_table(out, status)
    printed = out.file.getvalue()
    row = next(line for line in printed.splitlines()[printed.splitlines().index(
        next(l for l in printed.splitlines() if "Model use, every build so far" in l)):]
        if line.startswith("episodes"))
    assert row.split()[1:4] == ["25", f"{episodes['tokens_in']:,}", f"{episodes['tokens_out']:,}"]


def test_an_anthropic_call_records_anthropic_tokens_and_its_priced_cost(demo_project, monkeypatch):
    """The real anthropic SDK over a mocked transport, inside a real materialization."""
    model = "claude-sonnet-4-6"
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("SYNIX_LLM_MODEL", model)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")

    def reply(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages"
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "Chose Rust for the dotfile sync CLI."}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0}})

    monkeypatch.setattr(resource, "make_client", lambda **kw: AnthropicClient(
        model=model, api_key="sk-ant-test-not-a-key",
        http_client=httpx2.Client(transport=httpx2.MockTransport(reply))))
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _register_conversations(defs, instance, demo_project)
    _materialize(defs, instance, "transcripts", "episodes")
    md = _latest(instance, "episodes")
    assert md["provider"].value == "anthropic"
    assert md["anthropic.calls"].value == 1
    assert md["anthropic.input_tokens"].value == 1200 and md["anthropic.output_tokens"].value == 80
    assert md["anthropic.cost_usd"].value == estimate_cost(model, 1200, 80) > 0
    assert not {k for k in md if k.startswith("fake.")}
