"""`before` (design 003's browse_timeline) is an exclusive end, turned into the inclusive prefix
bound `until` takes: the unit before it (day, month, year, second)."""
from __future__ import annotations

import pytest

from synix_resources.errors import SearchError
from synix_resources.search.filters import just_before


@pytest.mark.parametrize("given, bound", [
    ("2025-03", "2025-02"), ("2025-01", "2024-12"), ("2025", "2024"), ("2025-03-01", "2025-02-28"),
    ("2024-03-01", "2024-02-29"), ("2025-03-01T00:00:00Z", "2025-02-28T23:59:59"),
    ("0001-01-01", "0000"), ("0001", "0000")])
def test_before_is_the_unit_before_as_an_inclusive_bound(given, bound):
    assert just_before(given) == bound


def test_before_that_is_not_a_date_is_refused_naming_it():
    with pytest.raises(SearchError, match="before 'yesterday' is not a date"):
        just_before("yesterday")
    assert just_before(None) is None
