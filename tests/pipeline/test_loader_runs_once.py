"""A pipeline file is run once per process for each content it has: every action of a script
loads its pipeline, and its top level (a print, a download) must not run again each time. A
changed file — or a changed file it loads, like a branch's declaration.py — is run again."""
from __future__ import annotations

from synix_assets.pipeline.loader import load_declaration, load_pipeline

HEAD = '''from synix_assets.pipeline.api import Pipeline
import pathlib
counter = pathlib.Path(__file__).with_suffix(".count")
counter.write_text(str(int(counter.read_text()) + 1 if counter.exists() else 1))
pipeline = Pipeline("p")
pipeline.source("exports", path="exports")
'''


def _runs(path) -> int:
    return int(path.with_suffix(".count").read_text())


def test_a_pipeline_file_is_run_once_however_often_it_is_loaded(tmp_path):
    path = tmp_path / "pipeline.py"
    path.write_text(HEAD)
    first = load_pipeline(path)
    for _ in range(5):
        again = load_pipeline(path)
    assert _runs(path) == 1
    assert list(again.sources) == ["exports"] and again is not first


def test_each_load_gets_its_own_pipeline_to_change(tmp_path):
    path = tmp_path / "pipeline.py"
    path.write_text(HEAD + "pipeline.merge('transcripts', from_=['exports'])\n")
    changed = load_pipeline(path)
    changed.remove("transcripts")
    assert "transcripts" in load_pipeline(path).steps  # the kept declaration was not changed
    assert load_pipeline(path, base_dir=tmp_path / "elsewhere").base_dir == (tmp_path / "elsewhere").resolve()
    assert load_pipeline(path).base_dir == tmp_path.resolve()


def test_an_edited_pipeline_file_is_run_again(tmp_path):
    path = tmp_path / "pipeline.py"
    path.write_text(HEAD)
    load_pipeline(path)
    path.write_text(HEAD + "pipeline.merge('transcripts', from_=['exports'])\n")
    assert "transcripts" in load_pipeline(path).steps
    assert _runs(path) == 2


def test_a_wrapper_whose_loaded_file_changed_is_run_again(tmp_path):
    """A branch of a script: pipeline.py loads declaration.py; only declaration.py changes."""
    decl = tmp_path / "declaration.py"
    decl.write_text(HEAD)
    wrapper = tmp_path / "pipeline.py"
    wrapper.write_text("from synix_assets.pipeline.loader import declared\n"
                       "pipeline = declared(__file__, 'declaration.py').pipeline\n")
    assert "transcripts" not in load_pipeline(wrapper).steps
    decl.write_text(HEAD + "pipeline.merge('transcripts', from_=['exports'])\n")
    assert "transcripts" in load_pipeline(wrapper).steps
    assert load_declaration(wrapper).pipeline.steps.keys() == {"transcripts"}
    assert _runs(decl) == 2


def test_a_pipeline_declared_from_toml_is_run_again_when_the_toml_changes(tmp_path):
    path = tmp_path / "pipeline.py"
    path.write_text(HEAD)
    toml = tmp_path / "pipeline.toml"
    load_pipeline(path).to_toml(toml)
    path.write_text(HEAD.replace('pipeline = Pipeline("p")\npipeline.source("exports", path="exports")\n',
                                 'pipeline = Pipeline.from_toml("pipeline.toml")\n'))
    assert list(load_pipeline(path).sources) == ["exports"]
    toml.write_text(toml.read_text().replace('"exports"', '"chats"'))
    assert list(load_pipeline(path).sources) == ["chats"]
