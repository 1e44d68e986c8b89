"""The bins column's text: made without json.dumps and read back in one json.loads, it is
json.dumps' text and its lists, so that rows written before and after read the same."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from projections.writers.usage_tables import NO_BINS, _bins_of, bins_text

FINITE = st.floats(allow_nan=False, allow_infinity=False)


@given(st.lists(FINITE, max_size=12))
def test_the_text_is_json_dumps(bins: list[float]) -> None:
    assert bins_text(bins) == json.dumps(bins)


def test_no_bins_is_an_empty_list() -> None:
    assert bins_text([]) == NO_BINS == "[]"


@given(st.lists(st.lists(FINITE, max_size=12), max_size=20))
def test_many_lists_read_back_in_order(lists: list[list[float]]) -> None:
    texts = [json.dumps(bins) for bins in lists]
    assert _bins_of(texts) == [json.loads(text) for text in texts]
    assert _bins_of(iter(texts)) == lists
