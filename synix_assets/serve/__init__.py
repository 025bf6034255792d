"""`synix serve` / `synix mcp` / `synix ask`: the built memory, read-only, for people and agents.

`synix_assets.app.memory.MemoryService` holds the logic; the HTTP API (`api.py`), the explorer
(`explorer.py`), the MCP server (`mcp_server.py`) and the ask agent (`ask.py`) are thin layers
over it. `synix serve --home` (`home.py`, `live_api.py`) serves every tenant of a home over
`synix_assets.app.live.TenantServices`.
"""
