"""Agent-written memories (Syke's write and read tools) as records of the store: the writes
(writes.py, appended to the branch's memory-ops log), the records a build makes of the log
(records.py) and the reads (reads.py)."""
from synix_resources.agent_memory import AGENT_LAYERS, LINK_LAYER, MEMORY_LAYER
from synix_assets.engine.agent_memory.writes import MemoryWriter, apply_log

__all__ = ["AGENT_LAYERS", "LINK_LAYER", "MEMORY_LAYER", "MemoryWriter", "apply_log"]
