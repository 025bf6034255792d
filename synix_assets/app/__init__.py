"""The application layer: the use cases every door calls — the CLI, the Python API, the HTTP
API and explorer, the MCP tools, `synix ask`, the Dagster jobs and the sensors.

A use case is written once here, in terms of the project, the engine and the store; the doors
only turn their input (arguments, query parameters, tool calls) into a call and the answer (or a
Synix error) into their output. Nothing here knows about HTTP, click or MCP, and nothing below
this floor imports it.
"""
