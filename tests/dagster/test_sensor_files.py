"""The export sensor's look at the files (`changed_files`): a file that vanishes mid-tick is a
removal, never a failed tick; a .jsonl whose last line stays cut short is read once abandoned."""
import os
import time

from synix_assets.dagster_defs.sensors import SETTLE_SECONDS, changed_files


class _Listing:
    """Stands in for a SourceReader: lists the paths it was given, existing or not."""

    def __init__(self, *paths):
        self.paths = paths

    def files(self):
        return [("src", p, None) for p in self.paths]


def _age(path, seconds):
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_a_file_gone_between_the_listing_and_its_read_is_reported_removed_not_a_failed_tick(tmp_path):
    kept, gone = tmp_path / "kept.json", tmp_path / "gone.json"
    for f in (kept, gone):
        f.write_text("[]")
        _age(f, SETTLE_SECONDS + 1)
    cursor, changed = changed_files([_Listing(kept, gone)], {}, time.time())
    assert {name for name, _ in changed} == {str(kept), str(gone)}
    gone.unlink()  # the listing still names it: it vanished mid-tick
    cursor2, changed2 = changed_files([_Listing(kept, gone)], cursor, time.time())
    assert changed2 == [(str(gone), "removed")]
    assert str(gone) not in cursor2 and cursor2[str(kept)] == cursor[str(kept)]


def test_a_jsonl_with_a_cut_last_line_waits_while_fresh_and_is_read_once_abandoned(tmp_path):
    session = tmp_path / "session.jsonl"
    session.write_text('{"a": 1}\n{"b": 2')
    cursor, changed = changed_files([_Listing(session)], {}, time.time())
    assert changed == [] and cursor[str(session)]["sha"] is None  # a tool may still be writing
    _age(session, SETTLE_SECONDS + 1)
    cursor, changed = changed_files([_Listing(session)], cursor, time.time())
    assert changed == []  # first sight of its new mtime: one more tick to be sure
    cursor, changed = changed_files([_Listing(session)], cursor, time.time())
    assert [name for name, _ in changed] == [str(session)] and cursor[str(session)]["sha"]


def test_a_jsonl_still_growing_is_not_read_before_its_line_ends(tmp_path):
    session = tmp_path / "session.jsonl"
    session.write_text('{"a": 1}\n{"b"')
    cursor, _ = changed_files([_Listing(session)], {}, time.time())
    with session.open("a") as fh:
        fh.write(': 2')  # still appending: size and mtime move
    cursor, changed = changed_files([_Listing(session)], cursor, time.time())
    assert changed == [] and cursor[str(session)]["sha"] is None
