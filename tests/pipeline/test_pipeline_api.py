"""The pipeline API: validation errors name the step, versions track exactly what they should,
TOML round-trips, the loader reports file and line."""
from __future__ import annotations

import pytest

from synix_assets.pipeline.api import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.pipeline.prompts import prompt, template
from synix_assets.app.init import EXAMPLES
from synix_resources.errors import PipelineDefinitionError


def _base(**kw):
    p = Pipeline("t", base_dir="/tmp", **kw)
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"])
    return p


def _p1(record):
    return "Version one:\n" + record.content


def _p2(record):
    return "Version two:\n" + record.content


def test_unknown_from_is_one_error_naming_the_step():
    p = _base()
    p.transform("episodes", from_="transcriptz", prompt=_p1)
    with pytest.raises(PipelineDefinitionError, match="step 'episodes'.*'transcriptz'"):
        p.validate()


def test_cycle_is_reported_with_its_path():
    p = _base()
    p.transform("a", from_="b", prompt=_p1)
    p.transform("b", from_="a", prompt=_p1)
    with pytest.raises(PipelineDefinitionError, match="cycle"):
        p.validate()


@pytest.mark.parametrize("call", [
    lambda p: p.transform("e", from_=["transcripts"], prompt=_p1),
    lambda p: p.aggregate("m", from_=["transcripts"], period="month", prompt=_p1),
    lambda p: p.fold("f", from_=["a", "b"], prompt=_p1),
    lambda p: p.merge("m2", from_="transcripts"),
])
def test_wrong_from_arity_is_rejected_naming_the_step(call):
    with pytest.raises(PipelineDefinitionError, match="from_"):
        call(_base())


def test_aggregate_needs_exactly_one_grouping_and_a_known_period():
    with pytest.raises(PipelineDefinitionError, match="exactly one of period= or topics="):
        _base().aggregate("m", from_="transcripts", prompt=_p1)
    with pytest.raises(PipelineDefinitionError, match="unknown period"):
        _base().aggregate("m", from_="transcripts", period="fortnight", prompt=_p1)


def test_duplicate_names_and_projection_of_unknown_layer_are_rejected():
    p = _base()
    with pytest.raises(PipelineDefinitionError, match="declared twice"):
        p.transform("transcripts", from_="transcripts", prompt=_p1)
    p.search_index("idx", from_=["nope"])
    with pytest.raises(PipelineDefinitionError, match="projection 'idx'.*'nope'"):
        p.validate()


def test_code_version_changes_exactly_when_prompt_model_or_config_change():
    def build(prompt_fn=_p1, model=None, temperature=None, period="month"):
        p = _base()
        p.transform("episodes", from_="transcripts", prompt=prompt_fn, model=model, temperature=temperature)
        p.aggregate("monthly", from_="episodes", period=period, prompt=prompts.monthly_rollup)
        return p

    base = build()
    assert build().version("episodes") == base.version("episodes")
    assert build(prompt_fn=_p2).version("episodes") != base.version("episodes")
    assert build(prompt_fn=_p2).version("monthly") == base.version("monthly")
    assert build(model="claude-x").version("episodes") != base.version("episodes")
    assert build(temperature=0.9).version("episodes") != base.version("episodes")
    assert build(period="week").version("monthly") != base.version("monthly")
    assert build(period="week").version("episodes") == base.version("episodes")
    assert base.version("episodes", "anthropic:m1") != base.version("episodes", "fake:m1")


def test_explicit_prompt_version_overrides_the_source_hash():
    @prompt(version="2026-01")
    def a(record):
        return "a" + record.content

    @prompt(version="2026-01")
    def b(record):
        return "something else entirely" + record.content

    pa, pb = _base(), _base()
    pa.transform("e", from_="transcripts", prompt=a)
    pb.transform("e", from_="transcripts", prompt=b)
    assert pa.version("e") == pb.version("e")


def test_template_file_prompt_is_versioned_by_its_content(tmp_path):
    f = tmp_path / "episode.txt"
    f.write_text("Summarise {content}")
    p = _base()
    p.transform("e", from_="transcripts", prompt=template(f))
    v1 = p.version("e")
    f.write_text("Summarise briefly {content}")
    assert p.version("e") != v1


def test_layers_generated_in_a_loop_validate():
    p = _base()
    p.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
    for topic in ["work", "health", "projects"]:
        p.aggregate(f"topic-{topic}", from_="episodes", topics=[topic], prompt=prompts.topical_rollup)
    assert p.validate().layer_order()[-3:] == ["topic-work", "topic-health", "topic-projects"]


def test_toml_round_trip_preserves_every_step_and_version():
    p = load_pipeline(EXAMPLES / "monthly.py")
    text = p.to_toml()
    q = Pipeline.from_toml(text, base_dir=p.base_dir)
    assert q.layer_order() == p.layer_order()
    for layer in p.layer_order():
        assert q.version(layer) == p.version(layer)
        assert q.steps[layer].config == p.steps[layer].config
    assert q.to_toml() == text


def test_levels_and_partitioning_of_the_reference_pipeline():
    p = load_pipeline(EXAMPLES / "monthly.py")
    assert [p.level(l) for l in p.layer_order()] == [0, 1, 2, 3]
    assert [p.partitioning(l) for l in p.layer_order()] == ["conversation", "conversation", "period", "single"]
    t = load_pipeline(EXAMPLES / "topical.py")
    assert t.layer_order() == ["transcripts", "episodes", "topics", "core"]


def test_loader_reports_syntax_error_with_file_and_line(tmp_path):
    f = tmp_path / "pipeline.py"
    f.write_text("from synix_assets.pipeline.api import Pipeline\npipeline = Pipeline('x'\n")
    with pytest.raises(PipelineDefinitionError, match=r"pipeline.py:\d+: syntax error"):
        load_pipeline(f)


def test_loader_reports_runtime_error_line_and_missing_pipeline(tmp_path):
    f = tmp_path / "pipeline.py"
    f.write_text("x = 1\ny = 1 / 0\n")
    with pytest.raises(PipelineDefinitionError, match=r"pipeline.py:2: ZeroDivisionError"):
        load_pipeline(f)
    f.write_text("x = 1\n")
    with pytest.raises(PipelineDefinitionError, match="defines no `pipeline"):
        load_pipeline(f)


def test_relative_paths_resolve_next_to_the_pipeline_file_not_the_cwd(tmp_path, monkeypatch):
    (tmp_path / "proj").mkdir()
    f = tmp_path / "proj" / "pipeline.py"
    f.write_text((EXAMPLES / "monthly.py").read_text())
    monkeypatch.chdir("/")
    p = load_pipeline(f)
    assert p.resolve(p.sources["exports"].path) == (tmp_path / "proj" / "exports").resolve()


def test_output_is_the_earlier_designs_name_for_artifact_and_makes_the_same_projections():
    from synix_assets.pipeline.steps import ContextDocProjection, SearchIndexProjection

    def declared(method: str):
        p = _base()
        p.transform("summaries", from_="transcripts", prompt=_p1)
        getattr(p, method)("context", from_="summaries", surface="projection")
        getattr(p, method)("search", from_=["summaries"], surface="search", embeddings=True)
        return p.validate()

    out, art = declared("output"), declared("artifact")
    assert isinstance(out.projections["context"], ContextDocProjection)
    assert out.projections["context"].path.name == "context.md"
    assert isinstance(out.projections["search"], SearchIndexProjection)
    assert out.projections == art.projections
    assert out.to_toml() == art.to_toml()
    with pytest.raises(PipelineDefinitionError) as err:
        _base().output("x", from_="transcripts", surface="graph")
    assert "unknown surface 'graph'" in err.value.one_line()
