"""The transcoder the log's events are stored through: a job batch's records written by orjson
decode to what the library's own encoder would give, every other event and every record orjson
would write its own way are the library's, and the event's fields keep their order."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import orjson
import pytest
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, UUIDAsHex
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.store.transcoder import LedgerTranscoder
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
