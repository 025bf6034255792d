"""The Python door: what a user's own Python code calls (`pipeline.branch(...)`, python_api/branch.py).
It sits with the CLI, above the application layer, and nothing below it imports it except the
entry module `synix_assets.pipeline.api`, whose `Pipeline.branch` opens it."""
