"""The live inbox: turns posted by agents, their sessions, and the outbox to the build."""
