"""Agent-written memories: the durable ops log (log.py) and what it means (replay.py), and the
two layers a build makes of it (named here so every floor can tell them from pipeline layers)."""
MEMORY_LAYER = "agent_memories"
LINK_LAYER = "agent_links"
AGENT_LAYERS = (MEMORY_LAYER, LINK_LAYER)
