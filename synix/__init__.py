"""Synix: a build system for agent memory, built on Dagster.

    from synix import Pipeline

    pipeline = Pipeline("personal-memory", agent="mark")
    pipeline.source("chatgpt", file="exports/conversations.json", format="chatgpt-export")
    pipeline.transform("summaries", from_="chatgpt", prompt=summarize_conversation)
    pipeline.aggregate("monthly", from_="summaries", period="month", prompt=monthly_reflection)
    pipeline.fold("world-model", from_="monthly", prompt=world_model_prompt)
    pipeline.artifact("context", from_="world-model", surface="projection")
    pipeline.artifact("memory-index", from_=["summaries", "monthly"], surface="search")

    print(pipeline.plan())
    pipeline.run()
    for hit in pipeline.search("Rust"):
        print(hit.content, [leaf.id for leaf in hit.leaves()])

This package is the public face of the application layer that the CLI, the HTTP/MCP server and
the Dagster definitions also go through (`synix_assets`, `synix_resources`); everything not named
in `__all__` is internal.
"""
from synix_assets.pipeline.prompts import prompt, template
from synix_assets.pipeline.records import Record
from synix_assets.pipeline.validators import Flag
from synix_assets.python_api.branch import BranchDiff, PipelineBranch
from synix_assets.python_api.pipeline import Pipeline, open
from synix_assets.python_api.reading import Hit, Lineage, SearchResults
from synix_assets.python_api.results import CostWarning, EvalResult, Plan, PurgeResult, SyncReport
from synix_resources.errors import SynixError

__all__ = [
    "BranchDiff",
    "CostWarning",
    "EvalResult",
    "Flag",
    "Hit",
    "Lineage",
    "Pipeline",
    "PipelineBranch",
    "Plan",
    "PurgeResult",
    "Record",
    "SearchResults",
    "SyncReport",
    "SynixError",
    "open",
    "prompt",
    "template",
]
