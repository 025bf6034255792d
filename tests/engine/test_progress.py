"""Per-partition progress reaches a listener while a layer builds (the CLI's bars use it)."""
from __future__ import annotations

from synix_assets.app.run import run_build
from synix_resources.process import progress


def test_build_reports_each_finished_partition_of_llm_layers(demo_project):
    seen: dict[str, list[int]] = {}
    events: list[tuple[str, str, dict]] = []
    with progress.listening(lambda layer, n: seen.setdefault(layer, []).append(n)):
        run_build(demo_project, progress=lambda layer, event, data: events.append((layer, event, data)))
    assert seen["episodes"] == list(range(1, 25))
    assert seen["monthly"][-1] == 6 and seen["core"][-1] == 6
    assert ("episodes", "progress", {"done": 24}) in events
    assert [e for e in events if e[0] == "episodes"][-1][1] == "done"
