"""The evidence ledger (Syke's Layer 1): append-only events, searchable with FTS5."""
