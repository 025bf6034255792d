"""Fixtures of the live tests (defined in live_helpers.py, shared with the server tests)."""
from live_helpers import inbox, live_project  # noqa: F401
