"""Every documented prompt form, on every step kind that takes a prompt, through a real build.

Forms (README "The pipeline file"): a plain function, `@prompt(version=…)` (with its system=),
`template("file.txt")` relative to pipeline.py, the builtin prompts, and a per-step `system=`.
Step kinds: transform, aggregate by period, aggregate by topics, fold. What reached the LLM is
observed by wrapping the fake provider's single attempt (the real client code runs around it).
"""
from __future__ import annotations

import json
import runpy

import pytest

from synix_assets.app.run import run_build
from synix_resources.llm.fake import FakeClient
from synix_resources.store.artifact_store import ArtifactStore

KINDS = ("ep", "mo", "tp", "fo")  # transform, aggregate by month, aggregate by topic, fold
FORMS = ("builtin", "fn", "versioned", "template", "system")

PIPELINE = '''
from synix_assets.pipeline import builtin_prompts as prompts
from synix_assets.pipeline.api import Pipeline
from synix_assets.pipeline.prompts import prompt, template

pipeline = Pipeline("forms", agent="me")
pipeline.source("exports", path="exports")
pipeline.merge("transcripts", from_=["exports"])


def ep_fn(record):
    return f"PLAINFN transform {record.title}: {record.content}"


@prompt(version="v1", system="DECORATED-SYSTEM")
def ep_versioned(record):
    return f"VERSIONED transform {record.title}: {record.content}"


def mo_fn(records, period):
    return f"PLAINFN period {period} of {len(records)}: " + " ".join(r.content for r in records)


@prompt(version="v1", system="DECORATED-SYSTEM")
def mo_versioned(records, period):
    return f"VERSIONED period {period}: " + " ".join(r.content for r in records)


def fo_fn(record, state):
    return f"PLAINFN fold {record.group_key} STATE<{state}> NEW<{record.content}>"


@prompt(version="v1", system="DECORATED-SYSTEM")
def fo_versioned(record, state):
    return f"VERSIONED fold {record.group_key} STATE<{state}> NEW<{record.content}>"


pipeline.transform("ep_builtin", from_="transcripts", prompt=prompts.episode_summary)
pipeline.transform("ep_fn", from_="transcripts", prompt=ep_fn)
pipeline.transform("ep_versioned", from_="transcripts", prompt=ep_versioned)
pipeline.transform("ep_template", from_="transcripts", prompt=template("prompts/transform.txt"))
pipeline.transform("ep_system", from_="transcripts", prompt=ep_fn, system="STEP-SYSTEM transform")

pipeline.aggregate("mo_builtin", from_="ep_builtin", period="month", prompt=prompts.monthly_rollup)
pipeline.aggregate("mo_fn", from_="ep_builtin", period="month", prompt=mo_fn)
pipeline.aggregate("mo_versioned", from_="ep_builtin", period="month", prompt=mo_versioned)
pipeline.aggregate("mo_template", from_="ep_builtin", period="month",
                   prompt=template("prompts/aggregate.txt"))
pipeline.aggregate("mo_system", from_="ep_builtin", period="month", prompt=mo_fn,
                   system="STEP-SYSTEM period")

TOPICS = ["talk message"]
pipeline.aggregate("tp_builtin", from_="ep_builtin", topics=TOPICS, prompt=prompts.topical_rollup)
pipeline.aggregate("tp_fn", from_="ep_builtin", topics=TOPICS, prompt=mo_fn)
pipeline.aggregate("tp_versioned", from_="ep_builtin", topics=TOPICS, prompt=mo_versioned)
pipeline.aggregate("tp_template", from_="ep_builtin", topics=TOPICS,
                   prompt=template("prompts/aggregate.txt"))
pipeline.aggregate("tp_system", from_="ep_builtin", topics=TOPICS, prompt=mo_fn,
                   system="STEP-SYSTEM topic")

pipeline.fold("fo_builtin", from_="mo_builtin", prompt=prompts.core_memory)
pipeline.fold("fo_fn", from_="mo_builtin", prompt=fo_fn)
pipeline.fold("fo_versioned", from_="mo_builtin", prompt=fo_versioned)
pipeline.fold("fo_template", from_="mo_builtin", prompt=template("prompts/fold.txt"))
pipeline.fold("fo_system", from_="mo_builtin", prompt=fo_fn, system="STEP-SYSTEM fold")
'''

TEMPLATES = {
    "transform.txt": "TEMPLATED transform of {title} ({date}, {group_key}):\n{content}\n{unknown}",
    "aggregate.txt": "TEMPLATED aggregate {group} ({count} inputs, period {period}, topic {topic}):\n{content}",
    "fold.txt": "TEMPLATED fold {group_key}\nSTATE<{state}>\nNEW<{content}>",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The project built once; every request the fake LLM received, as (layer, prompt, system)."""
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project

    root = init_project(tmp_path_factory.mktemp("forms") / "mem")
    (root / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    (root / "prompts").mkdir()
    for name, text in TEMPLATES.items():
        (root / "prompts" / name).write_text(text, encoding="utf-8")
    (root / "exports" / "talks.json").write_text(json.dumps([
        {"uuid": f"c-{i}", "name": f"Talk {i}", "created_at": f"2025-0{1 + i % 2}-1{i}T10:00:00Z",
         "updated_at": f"2025-0{1 + i % 2}-1{i}T10:01:00Z",
         "chat_messages": [{"uuid": f"c-{i}-m{j}", "sender": s, "text": f"subject{i} message {j}",
                            "created_at": f"2025-0{1 + i % 2}-1{i}T10:0{j}:00Z",
                            "content": [{"type": "text", "text": f"subject{i} message {j}"}]}
                           for j, s in enumerate(("human", "assistant"))]}
        for i in range(4)]))
    seen: list[tuple[str, str, str | None]] = []
    original = FakeClient.call_once

    def spy(self, request, model, attempt):
        seen.append((request.label.split("/")[0], request.prompt, request.system))
        return original(self, request, model, attempt)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FakeClient, "call_once", spy)
        mp.setenv("SYNIX_LLM_PROVIDER", "fake")
        mp.chdir(tmp_path_factory.mktemp("elsewhere"))  # template paths must not use the cwd
        report = run_build(ProjectPaths(root))
    return ProjectPaths(root), report, seen


def _requests(seen, layer):
    return [(p, s) for l, p, s in seen if l == layer]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", FORMS)
def test_every_prompt_form_builds_every_step_kind(built, kind, form):
    paths, report, seen = built
    layer = f"{kind}_{form}"
    assert report.failures == []
    assert report.layers[layer]["built"] >= 1 and report.layers[layer]["failed"] == 0
    requests = _requests(seen, layer)
    assert requests, f"no LLM request for {layer}"
    store = ArtifactStore(paths.store)
    try:
        assert store.current_index(layer), f"{layer} stored nothing"
    finally:
        store.close()
    expected_system = {"versioned": "DECORATED-SYSTEM",
                       "system": f"STEP-SYSTEM {dict(ep='transform', mo='period', tp='topic', fo='fold')[kind]}"
                       }.get(form)
    for prompt_text, system in requests:
        assert system == expected_system
        if form == "builtin":
            assert {"ep": "episode summary", "mo": "monthly rollup", "tp": "topical synthesis",
                    "fo": "core memory"}[kind] in prompt_text
        elif form == "template":
            assert prompt_text.startswith("TEMPLATED")
            assert "{content}" not in prompt_text and "{title}" not in prompt_text
        else:
            assert prompt_text.startswith("VERSIONED" if form == "versioned" else "PLAINFN")


def test_template_placeholders_are_filled_from_the_records(built):
    _, _, seen = built
    transform = [p for p, _ in _requests(seen, "ep_template")]
    assert any(p.startswith("TEMPLATED transform of Talk 0 (2025-01-10, c-0):\n") for p in transform)
    assert all(p.endswith("{unknown}") for p in transform)  # an unknown placeholder is kept as written
    month = [p for p, _ in _requests(seen, "mo_template")]
    assert any(p.startswith("TEMPLATED aggregate 2025-01 (2 inputs, period 2025-01, topic 2025-01)")
               for p in month)
    topic = [p for p, _ in _requests(seen, "tp_template")]
    assert topic and all(p.startswith("TEMPLATED aggregate talk message (") for p in topic)
    fold = [p for p, _ in _requests(seen, "fo_template")]
    assert fold[0].startswith("TEMPLATED fold 2025-01\nSTATE<(no memory yet)>\nNEW<")
    assert fold[1].startswith("TEMPLATED fold 2025-02\nSTATE<[fake ")  # the state from month 1


def test_fold_prompt_functions_see_the_state_so_far(built):
    _, _, seen = built
    for layer in ("fo_fn", "fo_versioned", "fo_system"):
        prompts = [p for p, _ in _requests(seen, layer)]
        assert len(prompts) == 2
        assert "STATE<(no memory yet)>" in prompts[0] and "STATE<[fake " in prompts[1]


def test_editing_a_template_file_rebuilds_only_the_layers_using_it(built, monkeypatch):
    paths, _, _ = built
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    (paths.root / "prompts" / "fold.txt").write_text("TEMPLATED v2 fold {group_key} {state} {content}")
    report = run_build(paths)
    built_layers = {k: v["built"] for k, v in report.layers.items() if v.get("built")}
    assert built_layers == {"fo_template": 1}


def test_template_prompts_survive_a_toml_round_trip_relative_to_the_pipeline(built):
    from synix_assets.pipeline.api import Pipeline
    from synix_assets.pipeline.loader import load_pipeline

    paths, _, _ = built
    pipeline = load_pipeline(paths.pipeline_file)
    text = pipeline.to_toml()
    assert 'prompt = "template:prompts/transform.txt"' in text
    defined = runpy.run_path(str(paths.pipeline_file))  # prompts defined in pipeline.py itself
    namespace = {name: defined[name] for name in
                 ("ep_fn", "ep_versioned", "mo_fn", "mo_versioned", "fo_fn", "fo_versioned")}
    again = Pipeline.from_toml(text, base_dir=paths.root, namespace=namespace)
    for layer in pipeline.steps:
        assert again.version(layer) == pipeline.version(layer), layer
