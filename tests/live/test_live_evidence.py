"""Each turn posted to a live inbox becomes one evidence event, once."""
from __future__ import annotations

from live_helpers import post

from synix_assets.app import ledger as use_case


def test_live_turns_become_events_once(live_project, inbox):
    post(inbox, "s1", "I moved to Lisbon last week", "Welcome to Lisbon!")
    assert use_case.sync_evidence(live_project).turns_read == 2
    post(inbox, "s1", "The flat is near the river")
    report = use_case.sync_evidence(live_project)
    assert (report.turns_read, report.appended) == (1, 1)
    hits = use_case.search_evidence(live_project, "Lisbon")
    assert {h["source"] for h in hits} == {"live"} and {h["conversation_id"] for h in hits} == {"s1"}
    assert {h["external_id"] for h in hits} == {"s1-1", "s1-2"}
