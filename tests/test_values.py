"""synix_resources/values.py: untrusted dates and numbers never raise past their caller (issue 40)."""
from __future__ import annotations

import json
import math

import pytest

from synix_resources.errors import InvalidTime
from synix_resources.values import HugeInt, epoch_utc, instant, iso_utc, load_json, small_int, utc_iso


@pytest.mark.parametrize("value, expected", [
    ("9999-12-31T23:59:59-14:00", None),      # year 10000 in UTC
    ("0001-01-01T00:00:00+14:00", None),      # year 0 in UTC
    ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
    ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),  # four digits, not strftime's "1-01-01"
    ("0999-05-08T13:56:00", "0999-05-08T13:56:00Z"),
    ("2025-07-06T05:10:13+02:00", "2025-07-06T03:10:13Z"),
    ("7" * 5000, None), (int("7" * 400), None), (1e300, None), (-1, None),
    (math.nan, None), (math.inf, None), ("nan", None), ("yesterday", None), ("", None),
    (True, None), ([2024], None), (HugeInt(5000), None),
    (1714585031, "2024-05-01T17:37:11Z"), (1714585031148, "2024-05-01T17:37:11Z"),
    ("1714585031", "2024-05-01T17:37:11Z"),
])
def test_a_date_field_is_utc_text_or_none_never_an_exception(value, expected):
    assert utc_iso(value) == expected


def test_epoch_and_iso_readers_say_none_past_what_utc_holds():
    assert epoch_utc(1e20) is None and epoch_utc(-0.5) is None and epoch_utc(math.inf) is None
    assert iso_utc("9999-12-31T23:59:59-14:00") is None and iso_utc("not a date") is None
    assert iso_utc("2024-02-29").isoformat() == "2024-02-29T00:00:00+00:00"


@pytest.mark.parametrize("value, why", [
    ("9999-12-31T23:59:59-14:00", "is outside the years 0001-9999 in UTC"),
    ("0001-01-01T00:00:00+14:00", "is outside the years 0001-9999 in UTC"),
    ("7" * 5000, "is not a date or date-time"),
    ("last tuesday", "is not a date or date-time"),
    ("", "is not a date or date-time"),
    (20250301, "is not a date or date-time"),
])
def test_a_date_parameter_is_refused_with_one_line_naming_it_and_the_accepted_form(value, why):
    with pytest.raises(InvalidTime) as info:
        instant(value, "as_of")
    line = info.value.one_line()
    shown = repr(value[:40]) if isinstance(value, str) else repr(value)
    assert line == (f"as_of {shown} {why} — use ISO 8601 between 0001 and 9999 in UTC, "
                    "e.g. 2025-03-01 or 2025-03-01T09:30:00Z")


def test_a_date_parameter_in_range_is_one_utc_instant():
    assert instant("2025-03-01", "as_of") == "2025-03-01T00:00:00Z"
    assert instant(" 9999-12-31T23:59:59+00:00 ", "as_of") == "9999-12-31T23:59:59Z"
    assert instant("2025-03-01T09:30:00-05:00", "valid_from") == "2025-03-01T14:30:00Z"


def test_json_with_an_integer_past_pythons_limit_keeps_it_as_a_huge_int_and_the_rest_as_read():
    text = '{"id": ' + "7" * 5000 + ', "n": -' + "9" * 4300 + ', "x": [1, 2.5]}'
    value = load_json(text)
    assert isinstance(value["id"], HugeInt) and value["id"].digits == 5000
    assert repr(value["id"]) == "a 5,000-digit integer"
    assert value["n"] == -int("9" * 4300) and value["x"] == [1, 2.5]
    with pytest.raises(json.JSONDecodeError):
        load_json("{not json")


def test_a_digit_string_is_an_int_or_a_huge_int():
    assert small_int("42") == 42 and small_int("-7") == -7
    assert isinstance(small_int("1" * 4301), HugeInt) and small_int("1" * 4300) == int("1" * 4300)
