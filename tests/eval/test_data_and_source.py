"""Benchmark files → cases, and cases → an export the parsers read with turn ids kept."""
import pytest

from synix_assets.eval.data import load_locomo, load_longmemeval, normalise_evidence
from synix_assets.eval.source import turn_map, write_export
from synix_assets.parsers.detect import parse_file
from synix_resources.errors import ExportFormatError


def test_locomo_questions_keep_categories_1_to_4_with_valid_evidence(locomo_file):
    bench = load_locomo(locomo_file)
    case = bench.cases[0]
    assert [s.session_id for s in case.sessions] == ["session_1", "session_2", "session_3"]
    assert case.sessions[0].date == "2023-01-08T13:56:00Z"
    assert bench.questions == 5 and bench.skipped_questions == 1  # empty evidence skipped; cat 5 excluded
    sister = next(q for q in case.questions if "sister" in q.text)
    assert sister.evidence_turns == ("D1:3", "D3:3")
    assert sister.evidence_sessions == ("session_1", "session_3")
    assert next(q for q in case.questions if "pottery" in q.text).evidence_turns == ("D3:1",)


def test_evidence_ids_are_normalised_and_invalid_ones_counted():
    valid = {"D1:1", "D1:2", "D9:1", "D4:4", "D30:5"}
    assert normalise_evidence(["D1:1; D1:2"], valid) == (["D1:1", "D1:2"], 0)
    assert normalise_evidence(["D9:1 D4:4 D4:6"], valid) == (["D9:1", "D4:4"], 1)
    assert normalise_evidence(["D30:05", "D", "D:11:26"], valid) == (["D30:5"], 2)


@pytest.mark.parametrize("shape", ["s", "m", "oracle"])
def test_longmemeval_shapes_load_the_same_questions_without_abstention(lme_files, shape):
    bench = load_longmemeval(lme_files[shape])
    assert bench.variant == shape
    assert [c.case_id for c in bench.cases] == ["q-boat", "q-violin"]
    assert bench.skipped_questions == 1  # the _abs question
    boat = bench.cases[0]
    dates = [s.date for s in boat.sessions]
    assert dates == sorted(dates)  # oracle files are unsorted; a memory is built in time order
    q = boat.questions[0]
    assert q.evidence_sessions == ("answer_aa01", "answer_aa02")
    assert sorted(q.evidence_turns) == ["answer_aa01_1", "answer_aa02_1"]
    assert q.category == "knowledge-update" and q.date == "2023-06-01T10:00:00Z"
    assert len(boat.sessions) == (2 if shape == "oracle" else 5)


def test_longmemeval_limit_counts_questions(lme_files):
    assert len(load_longmemeval(lme_files["s"], limit=1).cases) == 1


@pytest.mark.parametrize("content, needle", [
    (None, "no such file"), ("{oops", "not a readable LongMemEval JSON file"),
    ('[{"question": "x"}]', "not LongMemEval data")])
def test_bad_longmemeval_file_is_one_error(tmp_path, content, needle):
    path = tmp_path / "lme.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ExportFormatError, match=needle):
        load_longmemeval(path)


def test_each_session_becomes_a_dated_conversation_whose_messages_map_back_to_turns(locomo_file, tmp_path):
    case = load_locomo(locomo_file).cases[0]
    path = tmp_path / "exports" / "sessions.json"
    assert write_export(case, path) is True
    assert write_export(case, path) is False  # unchanged: not rewritten
    convs, report = parse_file(path)
    assert report.format == "claude" and len(convs) == 3
    second = convs[1]
    assert second.conversation_id == "conv-t/session_2" and second.created_at == "2023-03-20T10:00:00Z"
    assert second.messages[0].text == "Bob: I performed my first cello recital on Saturday."
    assert [m.role for m in second.messages] == ["assistant", "user", "assistant", "user"]
    session, turns = turn_map(case)["conv-t/session_2"]
    assert session == "session_2" and turns[3] == "D2:4"  # message #4 of the transcript
    assert "[#4 2023-03-20 10:00 UTC] User:\nAlice: Biscuit chewed" in second.transcript()


def test_sessions_dated_before_1000_or_in_the_last_minute_of_9999_export_as_readable_dates(tmp_path):
    from synix_assets.eval.data import Case, Session, Turn, locomo_date

    early, late = locomo_date("1:56 pm on 8 May, 0999"), locomo_date("11:59 pm on 31 December, 9999")
    assert (early, late) == ("0999-05-08T13:56:00Z", "9999-12-31T23:59:00Z")  # four-digit years
    turns = tuple(Turn(f"D2:{i}", "Ana", "user", f"turn {i}") for i in range(1, 71))
    case = Case("odd", [Session("session_1", early, turns[:2]), Session("session_2", late, turns)], [])
    path = tmp_path / "sessions.json"
    write_export(case, path)
    convs, report = parse_file(path)
    assert report.skipped == [] and [c.created_at for c in convs] == [early, late]
    stamps = [m.created_at for m in convs[1].messages]
    assert stamps[0] == late and stamps[-1] == "9999-12-31T23:59:59Z" and len(stamps) == 70
