"""What the type check found and the annotations now promise: a TOML step without a prompt is
one error naming the step (not a None prompt passed on), and `eval("synixbench")` answers an
EvalResult like the other benchmarks (it returned synixbench's bare dict)."""
from __future__ import annotations

import pytest

from synix import EvalResult, Pipeline
from synix_resources.errors import PipelineDefinitionError

TOML = '''
[pipeline]
name = "p"

[[sources]]
name = "exports"
path = "exports"
format = "auto"

[[steps]]
name = "transcripts"
kind = "merge"
from = ["exports"]

[[steps]]
name = "episodes"
kind = "transform"
from = ["transcripts"]
'''


def test_a_toml_transform_without_a_prompt_is_one_error_naming_the_step(tmp_path):
    with pytest.raises(PipelineDefinitionError) as err:
        Pipeline.from_toml(TOML, base_dir=tmp_path)
    assert err.value.one_line().splitlines() == [err.value.one_line()]
    assert "step 'episodes' (transform): no prompt in the TOML" in str(err.value)
    assert "template:path" in err.value.one_line()


def synixbench_report(branch: str, found: float) -> dict:
    """The shape synix_assets.eval.synixbench.run_synixbench returns."""
    return {"version": "1", "branch": branch, "questions": 12, "mode": "hybrid",
            "scores": {"found_at_altitude": found, "fits_altitude": 0.5, "provenance_ok": 1.0},
            "by_kind": {}, "per_question": [], "build_llm_calls": 0}


def test_a_synixbench_eval_result_has_its_figures_by_name_and_compares_by_found_at_altitude():
    main, branch = EvalResult(synixbench_report("main", 0.5)), EvalResult(synixbench_report("b", 0.75))
    assert (branch.benchmark, branch.branch, branch.headline) == ("synixbench", "b", "found_at_altitude")
    assert branch.found_at_altitude == 0.75 and branch.figures["questions"] == 12
    assert branch > main and main < branch and not main > branch
    assert repr(branch) == "EvalResult(synixbench on b: found_at_altitude=0.75)"
    with pytest.raises(AttributeError, match="no figure 'precision_at_5'; figures: fits_altitude, found_at_altitude"):
        branch.precision_at_5  # noqa: B018
    assert branch.to_json()["scores"]["found_at_altitude"] == 0.75


def test_a_locomo_eval_result_keeps_precision_at_5_as_its_headline():
    record = {"run": {"benchmark": "locomo", "branch": "main"},
              "systems": {"memory": {"hybrid": {"session_recall@5": 0.8, "turn_recall@10": 0.6}},
                          "raw_rag": {"hybrid": {"session_recall@5": 0.7}}}}
    result = EvalResult(record)
    assert result.precision_at_5 == 0.8 and result.turn_recall_at_10 == 0.6
    assert result.baselines == {"raw_rag": {"session_recall@5": 0.7}}
    assert result.headline == "session_recall@5"
    with pytest.raises(AttributeError, match="no figure 'recall_at_99'"):
        result.recall_at_99  # noqa: B018
