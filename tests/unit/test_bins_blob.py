"""The bins column's bytes: each bin's binary64, little-endian, in order, whatever the machine's
byte order, so that every float reads back as the very float it was, -0.0 and the subnormals
included."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from projections.writers.bins import bins_blob, bins_of_blob

FINITE = st.floats(allow_nan=False, allow_infinity=False)


@given(st.lists(FINITE, max_size=12))
def test_each_bin_is_its_little_endian_binary64(bins: list[float]) -> None:
    assert bins_blob(bins) == struct.pack(f"<{len(bins)}d", *bins)


@given(st.lists(FINITE, max_size=12))
def test_the_bins_read_back_bit_for_bit(bins: list[float]) -> None:
    back = bins_of_blob(bins_blob(bins))
    assert [struct.pack("<d", b) for b in back] == [struct.pack("<d", b) for b in bins]
    assert all(type(b) is float for b in back)


def test_no_bins_are_no_bytes() -> None:
    assert bins_blob([]) == b""
    assert bins_of_blob(b"") == []


def test_a_known_list_has_its_known_bytes() -> None:
    assert bins_blob([1.0, -0.0]) == bytes.fromhex("000000000000f03f0000000000000080")
    assert bins_of_blob(bytes.fromhex("9a9999999999b93f")) == [0.1]
