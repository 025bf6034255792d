"""`synix sync` compares each branch's declared pipeline with that branch's own last synced or
built definition: a branch built with another prompt does not make main report its steps changed
while `plan` has nothing to do; a promote makes the branch's definition main's."""
from __future__ import annotations

from synix_assets.app import branches
from synix_assets.app.plan import make_plan
from synix_assets.app.run import run_build
from synix_assets.app.sync import sync

EPISODES = 'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)\n'
REWORDED = '''
def reworded(record):
    return "Summarise it differently.\\n" + prompts.episode_summary(record)


pipeline.remove("episodes")
pipeline.transform("episodes", from_="transcripts", prompt=reworded)
'''


def test_main_syncs_clean_after_a_branch_built_another_prompt(demo_project):
    run_build(demo_project)
    assert sync(demo_project)["changes"] == []
    branches.create_branch(demo_project, "reworded")
    exp = demo_project.on_branch("reworded")
    branches.write_branch_pipeline(exp, exp.pipeline_file.read_text() + REWORDED)
    assert [c["step"] for c in sync(exp)["changes"]] == ["episodes", "monthly", "core", "memory-index", "context"]
    run_build(exp)
    # main: nothing declared changed and nothing to build — sync and plan agree
    assert sync(demo_project)["changes"] == []
    assert all(v.stale == 0 for v in make_plan(demo_project).layers.values())
    assert sync(exp)["changes"] == []
    # promoted, main's definition is the branch's: nothing changed for main either
    branches.promote_branch(demo_project, "reworded")
    assert sync(demo_project)["changes"] == []
