"""The forget use case every door calls: the application layer hands the forget operation
`synix run`'s own build, so a door never wires the rebuild itself."""
from __future__ import annotations

from synix_assets.app import forget as use_case
from synix_assets.app.run import run_build


def test_the_forget_use_case_rebuilds_with_the_run_build(monkeypatch, tmp_path):
    seen = {}

    def operation(paths, target, dry_run, *, llm_config, rebuild):
        seen.update(paths=paths, target=target, dry_run=dry_run, rebuild=rebuild)
        return "report"

    monkeypatch.setattr(use_case, "forget_with", operation)
    assert use_case.forget(tmp_path, "conv-1", dry_run=True) == "report"
    assert seen == {"paths": tmp_path, "target": "conv-1", "dry_run": True, "rebuild": run_build}

