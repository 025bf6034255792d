"""`synix forget`: remove a conversation (or a whole export file) and everything built from it.

core.py runs the journaled operation; plan.py computes what goes (journal.py keeps it durable),
phases.py and dagster.py remove it, files.py rewrites the exports, verify.py purges SQLite files
and proves nothing is left. The build is passed in (`rebuild=`), never imported.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synix_assets.forget.core import (PHASES, ForgetReport, finish_pending_forget, forget,
                                          pending_forget)

__all__ = ["PHASES", "ForgetReport", "finish_pending_forget", "forget", "pending_forget"]


def __getattr__(name: str):
    # resolved on first use: `python -m synix_assets.forget.verify` (the raw-byte check's child
    # process) imports this package first and must not load the store, the cache and the rest
    if name in __all__:
        from synix_assets.forget import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
