"""LLMResource inside Dagster and outside it."""

import dagster as dg
import pytest

from synix_resources.errors import LLMError
from synix_resources.llm.resource import LLMResource
from synix_resources.llm.types import LLMRequest


def test_resource_serves_an_asset_inside_materialize(tmp_path, monkeypatch):
    for name in ("SYNIX_LLM_PROVIDER", "SYNIX_LLM_MODEL", "SYNIX_FAKE_LATENCY_S",
                 "SYNIX_FAKE_FAILURE_RATE", "SYNIX_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)

    @dg.asset
    def summaries(context: dg.AssetExecutionContext, llm: LLMResource) -> list[str]:
        results = llm.complete_many([LLMRequest(f"Conversation {i} about gardening and tomato "
                                                f"variety {i}", label=f"c{i}", template_hash="t")
                                     for i in range(5)] +
                                    [LLMRequest("bad SYNIX_FAIL_400", label="c-bad")])
        good = [r for r in results if not isinstance(r, LLMError)]
        context.add_output_metadata({"calls": len(results), "failed": len(results) - len(good),
                                     "cost_usd": sum(r.cost_usd for r in good)})
        return [r.text for r in good]

    llm = LLMResource(provider="fake", concurrency=4, cache_path=str(tmp_path / "llm.sqlite"))
    result = dg.materialize([summaries], resources={"llm": llm})
    assert result.success
    texts = result.output_for_node("summaries")
    assert len(texts) == 5 and len(set(texts)) == 5 and all("fake" in t for t in texts)
    metadata = result.get_asset_materialization_events()[0].materialization.metadata
    assert metadata["failed"].value == 1


def test_resource_env_override_and_direct_use_outside_dagster(monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    llm = LLMResource(provider="fake")
    text = "The garden needs water every morning in July. Tomatoes grow fast."
    response = llm.complete(LLMRequest("x", sources=[("s1", text)]))
    assert response.provider == "extractive" and response.model == "extractive-v2"
    assert llm.get_client() is llm.get_client()


def test_resource_repr_hides_api_key(monkeypatch):
    monkeypatch.delenv("SYNIX_LLM_PROVIDER", raising=False)
    llm = LLMResource(provider="fake", api_key="sk-SECRET-XYZ")
    assert "sk-SECRET-XYZ" not in repr(llm)


def test_resource_with_env_var_api_key_in_materialize(monkeypatch):
    monkeypatch.delenv("SYNIX_LLM_PROVIDER", raising=False)
    monkeypatch.setenv("MY_FAKE_KEY", "sk-from-env")

    @dg.asset
    def one(llm: LLMResource) -> str:
        return llm.complete(LLMRequest("hello world example")).provider

    llm = LLMResource(provider="fake", api_key=dg.EnvVar("MY_FAKE_KEY"))
    result = dg.materialize([one], resources={"llm": llm})
    assert result.output_for_node("one") == "fake"


def test_replay_resource_without_cache_fails_clearly(monkeypatch):
    monkeypatch.delenv("SYNIX_LLM_PROVIDER", raising=False)
    llm = LLMResource(provider="fake", replay=True)
    with pytest.raises(LLMError) as info:
        llm.complete(LLMRequest("x", label="conv-1"))
    assert "replay" in info.value.one_line() and "conv-1" in info.value.one_line()
