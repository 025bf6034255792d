"""The Python door: what a user's own Python code calls (`Pipeline`, python_api/pipeline.py, and
`pipeline.branch(...)`, python_api/branch.py). It sits with the CLI, above the application layer,
and nothing below it imports it except the entry module `synix_assets.pipeline.api`, the name
every project's pipeline.py imports `Pipeline` by."""
