"""The `Pipeline` a user's `pipeline.py` writes (imported by its old name,
synix_assets.pipeline.api): the data class PipelineSpec plus `.branch()`, which opens the branch
API. It lives with the Python door because branching plans and runs builds (the application layer)."""
from __future__ import annotations

from synix_assets.pipeline.spec import PipelineSpec


class Pipeline(PipelineSpec):
    def branch(self, name: str, *, from_branch: str | None = None):
        """This pipeline's project on branch `name` (created from main if new): override steps,
        then plan, run, diff and promote it (synix_assets.python_api.branch)."""
        # Imported here: loading a pipeline file (every synix command does) must not load the
        # branch machinery; only a branch made from Python needs it.
        from synix_assets.python_api.branch import PipelineBranch

        return PipelineBranch(self, name, from_branch=from_branch)
