"""The live brief in process: unbuilt sessions' newest turns within half the budget, the built
memory in the rest; before any build the live turns are the whole brief."""
from __future__ import annotations

from live_helpers import post

from synix_assets.app.tenants import TenantHome
from synix_assets.app.live import TenantServices


def test_the_brief_keeps_the_newest_unbuilt_turns_within_the_budget(tmp_path):
    home = TenantHome(tmp_path / "home")
    home.create("acme")
    services = TenantServices(home)
    try:
        inbox = services.inboxes.get("acme")
        post(inbox, "long", *[f"turn {i} " + "words about the garden " * 40 for i in range(8)])
        brief = services.brief("acme", "garden", budget_tokens=400)
        assert brief["tokens"] <= 400 and "nothing has been built" in brief["notice"]
        [session] = brief["live_sessions"]
        kept = [t["turn_id"] for t in session["turns"]]
        assert kept and kept[-1] == "long-8" and "long-1" not in kept  # newest first, oldest dropped
        assert brief["text"].startswith("## Session long (open, not yet in memory)")
    finally:
        services.close()
        home.close()
