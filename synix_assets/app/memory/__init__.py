"""Reading a built memory: the use cases behind the HTTP API, the explorer, the MCP tools,
`synix ask` and live's brief (`MemoryService`, one per branch; `BranchServices` picks it)."""
from synix_assets.app.memory.params import MAX_LIMIT, MODES, BadRequest
from synix_assets.app.memory.service import BranchServices, MemoryService

__all__ = ["MemoryService", "BranchServices", "BadRequest", "MAX_LIMIT", "MODES"]
