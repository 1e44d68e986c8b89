"""A job's digest is the sha256 of one fixed text: the record's own fields as compact JSON with
sorted keys (non-ASCII escaped), without the fields recording derives. Every digest already
stored (job_keys) was made so: a different text would turn each re-ingested job into a
conflict."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.chain import _DERIVED_FIELDS, _ORJSON_UNLIKE, record_digest
from tests.builders import stored_record


def test_the_digest_is_of_the_sorted_compact_json_of_what_the_record_says() -> None:
    record = {
        "t_inactive": 1700000100.5,
        "id": 42,
        "username": "élodie",
        "cluster": "c1",
        "extra": {"z": 1, "a": [1.0, None]},
        "charge": 12.5,  # derived when recorded: not part of what the job says
        "billing": 3.0,
        "usage_factor": 0.5,
        "in_balance": True,
        "qos": "high",  # said, and digested under extra, where records before QOS kept it
    }
    before = dict(record)
    text = (
        '{"cluster":"c1","extra":{"a":[1.0,null],"qos":"high","z":1},"id":42,'
        '"t_inactive":1700000100.5,"username":"\\u00e9lodie"}'
    )
    assert record_digest(record) == hashlib.sha256(text.encode("ascii")).hexdigest()
    assert record == before  # the record itself is left as it was


def _stdlib_digest(said: dict[str, Any]) -> str:
    # The text every stored digest was made from, by the standard library itself.
    text = json.dumps(said, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_KEYS = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7F)) | st.text()
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN, infinities and subnormals too
    | st.floats(min_value=-1e-3, max_value=1e-3)  # where the two write small floats apart
    | st.text()  # control characters, DEL, non-ASCII, lone surrogates
    # ASCII from the space up (DEL too), so that examples reach the compiled encoder's own text.
    | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7F))
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8))
def test_the_digest_text_is_the_standard_librarys_whatever_the_record_holds(
    said: dict[str, Any],
) -> None:
    for name in (*_DERIVED_FIELDS, "qos"):  # left out, or moved under extra: the first test
        said.pop(name, None)
    assert record_digest(said) == _stdlib_digest(said)


@pytest.mark.parametrize(
    "value",
    [
        1e-05,  # orjson: 0.00001
        2.5e-05,
        1e-07,  # orjson: 1e-7
        -3e-300,
        1e16,
        1.5e300,
        0.0001,
        float("nan"),  # orjson: null
        float("-inf"),
        2**64,  # past orjson's integers
        -(2**63) - 1,
        "\x7f",  # escaped by the standard library only
        '\x00\x1f\n\t"\\/',
        "élodie",
        "\u2028",
        "\ud800",  # a lone surrogate
        {"e-": "0.0000", "n": None},  # the marks inside strings
        [1, 2.0, True, None, {"b": 1, "a": [0.1]}],
    ],
)
def test_each_form_orjson_writes_its_own_way_gives_the_standard_librarys_digest(
    value: object,
) -> None:
    said = {"cluster": "c1", "id": 7, "extra": {"x": value}}
    assert record_digest(said) == _stdlib_digest(said)


def test_a_plain_job_record_takes_the_compiled_encoder() -> None:
    """The speed, not the text: a bench-like record holds none of the marks that send a
    record back to the standard library's encoder."""
    said = stored_record(queue="batch")
    text = orjson.dumps(said, option=orjson.OPT_SORT_KEYS)
    assert text.isascii() and _ORJSON_UNLIKE.search(text) is None
    assert text.decode() == json.dumps(said, sort_keys=True, separators=(",", ":"))
