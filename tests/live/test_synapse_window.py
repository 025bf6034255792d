"""The Synapse working window on a live inbox: evicted turns folded into the rolling summary
exactly once (a real process killed with SIGKILL mid-fold, then a restart), open loops created,
reinforced, completed and nudged, identity facts, and forgotten sessions taking theirs along."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

from live_helpers import post, wait_for

from synix_resources.live import procedural, window
from synix_resources.live.inbox import Inbox


def _chat(n: int) -> list[str]:
    return [f"message number {i} about the garden" for i in range(1, n + 1)]


def test_evicted_turns_fold_once_and_the_window_keeps_the_last_twelve(tmp_path):
    inbox = Inbox(tmp_path / "inbox.db")
    try:
        post(inbox, "s", *_chat(15))
        assert [t["n"] for t in window.working_memory(inbox, "s")] == list(range(4, 16))
        first = window.fold(inbox, "s")
        assert first["turn_ids"] == ["s-1", "s-2", "s-3"] and window.fold(inbox, "s") is None
        post(inbox, "s", *_chat(2))
        assert window.fold(inbox, "s")["turn_ids"] == ["s-4", "s-5"]
        summary = window.rolling_summary(inbox, "s")
        assert summary["folds"] == 2 and summary["folded_turn_ids"] == [f"s-{i}" for i in range(1, 6)]
        assert summary["how"] == window.EXTRACTIVE and "[s-5] user: message number 5 about the garden" in summary["text"]
    finally:
        inbox.close()


SLOW_FOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from synix_resources.live import window
    from synix_resources.live.inbox import Inbox

    def slow(prior, turns):  # a model call that takes long: the process is killed during it
        Path(sys.argv[2]).write_text(",".join(t["turn_id"] for t in turns))
        time.sleep(120)
        return window.extractive_fold(prior, turns)

    window.fold(Inbox(sys.argv[1]), "s", slow)
""")


def test_kill_9_mid_fold_then_restart_loses_no_turn_and_folds_none_twice(tmp_path):
    path, marker = tmp_path / "inbox.db", tmp_path / "folding"
    inbox = Inbox(path)
    post(inbox, "s", *_chat(14))
    inbox.close()
    proc = subprocess.Popen([sys.executable, "-c", SLOW_FOLD, str(path), str(marker)],
                            env={**os.environ}, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: marker.exists() and marker.read_text(), 60, "the fold to start")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL and marker.read_text() == "s-1,s-2"
    inbox = Inbox(path)  # the restart
    try:
        assert window.rolling_summary(inbox, "s") is None  # the killed fold left nothing
        assert [t["turn_id"] for t in window.pending(inbox, "s")] == ["s-1", "s-2"]
        assert window.fold(inbox, "s")["turn_ids"] == ["s-1", "s-2"]
        assert window.fold(inbox, "s") is None  # nothing folded twice
        post(inbox, "s", "one more")
        assert window.fold(inbox, "s")["turn_ids"] == ["s-3"]
        folded = inbox._open_conn().execute("SELECT turn_id FROM folded ORDER BY turn_id").fetchall()
        assert [r[0] for r in folded] == ["s-1", "s-2", "s-3"]
        assert window.rolling_summary(inbox, "s")["folded_turn_ids"] == ["s-1", "s-2", "s-3"]
    finally:
        inbox.close()


def test_a_fold_that_lost_the_race_commits_nothing(tmp_path):
    inbox = Inbox(tmp_path / "inbox.db")
    try:
        post(inbox, "s", *_chat(13))

        def racing(prior, turns):  # another folder commits while this one is summarising
            window.fold(inbox, "s")
            return window.extractive_fold(prior, turns)

        assert window.fold(inbox, "s", racing) is None
        assert window.rolling_summary(inbox, "s")["folds"] == 1
    finally:
        inbox.close()


def _turn(n: int, text: str, day: str, session: str = "s") -> dict:
    return {"turn_id": f"{session}-{n}", "session_id": session, "role": "user", "content": text,
            "ts": f"{day}T10:00:00Z"}


def test_loops_are_created_reinforced_completed_and_idle_ones_nudged():
    loops, _ = procedural.replay([
        _turn(1, "I need to file the tax return before Friday.", "2025-03-01"),
        _turn(2, "Remind me to call the dentist about the crown.", "2025-03-01"),
        _turn(3, "Should I switch to a standing desk?", "2025-03-02"),
        _turn(4, "Ugh, I still need to file that tax return.", "2025-03-04"),
        _turn(5, "Finally done: called the dentist, crown is booked.", "2025-03-05"),
    ])
    by_text = {l["text"]: l for l in loops}
    tax = by_text["file the tax return before Friday"]
    assert (tax["status"], tax["mentions"], tax["evidence"]) == ("reinforced", 2, ["s-1", "s-4"])
    assert tax["created_at"] == "2025-03-01T10:00:00Z" and tax["reinforced_at"] == "2025-03-04T10:00:00Z"
    dentist = by_text["call the dentist about the crown"]
    assert dentist["kind"] == "reminder" and dentist["status"] == "completed"
    assert dentist["completed_at"] == "2025-03-05T10:00:00Z" and dentist["evidence"] == ["s-2", "s-5"]
    assert by_text["Should I switch to a standing desk"]["kind"] == "question"
    assert {l["extractor"] for l in loops} == {procedural.RULES}
    now = datetime(2025, 3, 6, 12, tzinfo=timezone.utc)
    assert {l["text"] for l in procedural.active(loops)} == {tax["text"], "Should I switch to a standing desk"}
    assert [l["text"] for l in procedural.nudges(loops, now, days=3)] == ["Should I switch to a standing desk"]


def test_identity_facts_keep_the_latest_value_and_what_it_replaced():
    _, facts = procedural.replay([
        _turn(1, "Hi, my name is Dana Ortiz and I live in Berlin.", "2025-01-01"),
        _turn(2, "I work as a UX designer. I prefer tea over coffee.", "2025-01-02"),
        _turn(3, "Big news: I moved to Lisbon last week.", "2025-02-01"),
    ])
    by_key = {f["key"]: f for f in facts}
    assert by_key["name"]["value"] == "Dana Ortiz" and by_key["name"]["evidence"] == ["s-1"]
    assert by_key["job"]["value"] == "UX designer"
    assert by_key["preference"]["value"] == "tea over coffee"
    assert by_key["location"]["value"] == "Lisbon" and by_key["location"]["evidence"] == ["s-3"]
    assert by_key["location"]["replaces"] == {"value": "Berlin", "evidence": ["s-1"]}
    assert procedural.replay([_turn(1, "my name is on the list", "2025-01-01")])[1] == []
