"""The transcoder the log's events are stored through: a job batch's records written by orjson
decode to what the library's own encoder would give, every other event and every record orjson
would write its own way are the library's, and the event's fields keep their order. Read back by
orjson, every text gives what the library's decoder gives, and a text orjson would read its own
way is read by the library's."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import orjson
import pytest
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, UUIDAsHex
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.store.transcoder import LedgerTranscoder, _long_number, exact_loads
from tests.builders import stored_record


def _registered(transcoder: JSONTranscoder) -> JSONTranscoder:
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):  # the library's own
        transcoder.register(transcoding)
    return transcoder


LIBRARY = _registered(JSONTranscoder())
OURS = _registered(LedgerTranscoder())


def _batch(records: list[Any]) -> dict[str, Any]:
    # A JobsRecorded event's state as the library's mapper hands it over: its fields in order.
    return {
        "timestamp": datetime(2026, 11, 28, 1, 2, 3, tzinfo=UTC),
        "actor": "root",
        "reason": "ingest",
        "source": {"file": "jobs.jsonl"},
        "records": records,
        "originator_topic": "ledger.joblog:JobLog.JobsRecorded",
    }


def _same(encoded: bytes, state: dict[str, Any]) -> None:
    """`encoded` decodes to what the library's own text of `state` decodes to, in its order."""
    ours, library = OURS.decode(encoded), LIBRARY.decode(LIBRARY.encode(state))
    assert list(ours) == list(library) == list(state)
    # NaN is not equal to itself: compared as text (the datetime as the library gave it back).
    assert json.dumps(ours, default=str) == json.dumps(library, default=str)


_KEYS = st.text(max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text()
    | st.datetimes(timezones=st.just(UTC))  # the library transcodes it; orjson must not
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200)
@given(st.lists(st.dictionaries(_KEYS, _VALUES, max_size=6), min_size=1, max_size=5))
def test_a_batch_decodes_to_what_the_library_writes(records: list[dict[str, Any]]) -> None:
    state = _batch(records)
    _same(OURS.encode(state), state)


def _job(n: int, **extra: Any) -> dict[str, Any]:
    return stored_record(n, cluster="c1", **extra)


def test_a_batch_of_plain_records_is_written_by_orjson() -> None:
    # 1e-05 tells the two apart: orjson writes 0.00001, the standard library 1e-05.
    records = [_job(n, extra={"partition": "débug", "ratio": 1e-05}) for n in range(3)]
    state = _batch(records)
    encoded = OURS.encode(state)
    assert orjson.dumps(records) in encoded
    assert b'"ratio":0.00001' in encoded and b"1e-05" not in encoded
    _same(encoded, state)


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),  # orjson: null
        float("inf"),
        2**64,  # past orjson's integers
        datetime(2026, 1, 1, tzinfo=UTC),  # the library's transcoding, not orjson's text
        None,  # a null: the whole event is the library's (orjson's NaN would look the same)
    ],
)
def test_a_record_orjson_would_write_its_own_way_is_the_librarys(value: object) -> None:
    state = _batch([_job(1), _job(2, extra={"x": value})])
    encoded = OURS.encode(state)
    assert encoded == LIBRARY.encode(state)
    _same(encoded, state)


def test_a_record_with_a_key_that_is_not_text_is_the_librarys() -> None:
    state = _batch([_job(1, extra={1: "one"})])
    assert OURS.encode(state) == LIBRARY.encode(state)


def test_every_other_event_is_the_librarys() -> None:
    state = {"timestamp": datetime(2026, 1, 1, tzinfo=UTC), "actor": "root", "id": uuid4()}
    assert OURS.encode(state) == LIBRARY.encode(state)
    assert OURS.encode({"records": []}) == LIBRARY.encode({"records": []})


# --- reading ------------------------------------------------------------------------------------

_ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=6)  # surrogates, controls
_READ_SCALARS = (
    _SCALARS
    | _ANY_TEXT
    | st.from_regex(r"[0-9]{17,22}", fullmatch=True)  # a Flux job id's length, in a string
    | st.integers(min_value=10**17, max_value=2**65)
    | st.integers(min_value=-(2**65), max_value=-(10**17))
)
_READ_KEYS = _KEYS | _ANY_TEXT | st.sampled_from(["_type_", "_data_"])
_READ_VALUES = st.recursive(
    _READ_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_READ_KEYS, inner, max_size=3),
    max_leaves=10,
)


def _read(transcoder: JSONTranscoder, text: bytes) -> str:
    """What `transcoder` reads from `text`, as comparable text (NaN is not equal to itself; an
    integer and the float of it are), or the error it raises."""
    try:
        value = transcoder.decode(text)
    except Exception as err:  # noqa: BLE001 - the two must raise alike
        return f"raised {type(err).__name__}"
    return json.dumps(value, default=repr)


# The library's encoder as an older writer or another tool might have set it: every character
# past ASCII (a lone surrogate too, which the library's own cannot write) as a \u escape.
ESCAPING = _registered(JSONTranscoder())
ESCAPING.encoder = json.JSONEncoder(
    default=ESCAPING._encode_obj, separators=(",", ":"), ensure_ascii=True
)


def _texts(state: dict[str, Any]) -> list[bytes]:
    """`state` as each encoder writes it (the library's and ours refuse a lone surrogate)."""
    texts = [ESCAPING.encode(state)]
    for transcoder in (LIBRARY, OURS):
        with contextlib.suppress(UnicodeEncodeError):
            texts.append(transcoder.encode(state))
    return texts


@settings(max_examples=300)
@given(_READ_VALUES, st.lists(st.dictionaries(_READ_KEYS, _READ_VALUES, max_size=4), max_size=4))
def test_every_text_reads_as_the_librarys_decoder_reads_it(value: Any, records: Any) -> None:
    # Transcoded objects at the top, inside objects and inside lists (a datetime in a record),
    # keys `_type_` and `_data_` of plain objects, long numbers and digit strings, NaN, lone
    # surrogates and control characters: orjson reads each as the library does, or hands over.
    for state in ({"value": value}, _batch(records)):
        for text in _texts(state):
            assert _read(OURS, text) == _read(LIBRARY, text)


def test_a_batch_is_read_without_the_librarys_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    # A Flux job id of 19 digits is a string: it keeps the batch on orjson's path.
    records = [_job(n, extra={"flux_id": "1234567890123456789012"}) for n in range(3)]
    text = OURS.encode(_batch(records))
    expected = _read(LIBRARY, text)

    def refused(self: JSONTranscoder, data: bytes) -> Any:
        raise AssertionError("read by the library's decoder")

    monkeypatch.setattr(JSONTranscoder, "decode", refused)
    assert _read(OURS, text) == expected
    assert isinstance(OURS.decode(text)["timestamp"], datetime)  # the hook still ran on it


@pytest.mark.parametrize(
    "written",
    [
        b"18446744073709551616",  # past 64 bits: orjson would read a float
        b"-9223372036854775809",
        b"1000000000000000000",  # 19 digits that fit: read the slower way all the same
        b"NaN",  # orjson refuses NaN, the infinities and lone surrogates
        b"-Infinity",
        b'"\\ud800"',
        b'"\\u00e9"',  # an escape could spell a `_type_` key: read the slower way
        b'{"\\u005ftype_":"datetime_iso","_data_":"2026-01-01T00:00:00+00:00"}',  # as here
        b'{"_type_":"datetime_iso","_data_":"2026-01-01T00:00:00+00:00"}',  # inside a record
    ],
)
def test_a_text_orjson_would_read_its_own_way_is_read_by_the_library(
    written: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = LIBRARY.encode(_batch([_job(1), _job(2, extra={"x": "@"})])).replace(b'"@"', written)
    expected = _read(LIBRARY, text)
    assert not expected.startswith("raised")
    calls = []
    library_decode = JSONTranscoder.decode

    def spied(self: JSONTranscoder, data: bytes) -> Any:
        calls.append(data)
        return library_decode(self, data)

    monkeypatch.setattr(JSONTranscoder, "decode", spied)
    assert _read(OURS, text) == expected
    assert calls == [text]


@pytest.mark.parametrize(
    ("text", "long"),
    [
        (b'{"id":"1234567890123456789012"}', False),  # in a string
        (b'{"n":123456789012345678}', False),  # 18 digits
        (b'{"n":1234567890123456789}', True),
        (b"[-12345678901234567890]", True),
        (b"[1, 12345678901234567890]", True),
        (b'{"x":1.2345678901234567890123}', True),  # a digit run in a number: conservative
        (b'"a" 12345678901234567890123456789012345678901', True),
    ],
)
def test_a_long_number_is_told_from_a_long_digit_string(text: bytes, long: bool) -> None:
    assert _long_number(text) is long


@settings(max_examples=200)
@given(_READ_VALUES, st.booleans())
def test_exact_loads_is_json_loads(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, default=repr)
    assert json.dumps(exact_loads(text)) == json.dumps(json.loads(text))
