"""How events become the bytes the log stores, and back: the event store library's JSON
transcoder, with a job batch's records written by orjson and every event read by it.

A `JobLog.JobsRecorded` event is nearly all its records (BATCH_SIZE of them), and the library's
encoder (the standard library's, with a Python hook for the types it transcodes) took 2.9 µs a
job to write them, in the recording process an ingest waits for; orjson takes 0.3. The records
are JSON values by construction (ledger.ingest.to_record from validated input: text, finite
numbers, booleans, null, lists and objects of them), so both texts decode to the same records;
the rest of the event (its time, actor, reason, source) is still the library's. Where orjson
would write a record its own way (NaN as null, an integer past 64 bits, a key that is not text,
a datetime or a dataclass, which the library transcodes), the library writes the whole event, as
before. Two types orjson writes itself with no way to hand them over, a UUID and an Enum, would
come back as their text: a record built by to_record never holds either.

Reading is the other way round: orjson parses, where the library's decoder (the standard
library's, with a Python hook per object) took 3.0-3.5 µs a job to read a batch back, in every
rebuild and every read of past events; orjson 1.7. The library's hook still turns each
`{"_type_": ..., "_data_": ...}` object into its value, but a job's records are walked for it
only when the text holds such a key inside them. Where orjson would read a text its own way (an
integer past 64 bits, which it makes a float; NaN, the infinities and lone surrogates, which it
refuses), the library reads it, as before.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import orjson
from eventsourcing.persistence import JSONTranscoder

RECORDS = "records"  # the job batch's field (ledger.joblog.JobLog.JobsRecorded)
# Stands for the records while the library writes the rest, then is replaced by orjson's text:
# random, so that no actor, reason or source holds it.
_PLACEHOLDER = f"\x00fairledger:records:{secrets.token_hex(16)}"
_PLACEHOLDER_TEXT = orjson.dumps(_PLACEHOLDER)
# Types the library would hand to its transcodings, given to _not_plain rather than written by
# orjson in its own way.
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
# orjson reads an integer past 64 bits as a float, where the standard library keeps the integer.
# A text with a number of 19 digits or more is read by the standard library (shorter ones fit):
# a run of 19 digits after anything but a quote, found in the text with every digit made a 0 (a
# regular expression over a batch's 200 KB took 1.8 ms, more than orjson's whole reading). A
# long number in a string (a Flux job id, "id": "...") starts after its quote; one that does not
# also sends the text to the standard library: slower, as exact.
_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _long_number(text: bytes) -> bool:
    zeros = text.translate(_AS_ZEROS)
    at = zeros.find(_LONG_RUN)
    while at != -1:
        if at == 0 or zeros[at - 1] not in b'"0':
            return True
        at = zeros.find(_LONG_RUN, at + len(_LONG_RUN))
    return False


_TYPE_KEY = b'"_type_"'  # how both encoders write the library's transcoded-object key


def _not_plain(value: Any) -> Any:
    raise TypeError(type(value).__name__)


_HAND_OVER = object()  # _by_orjson's answer for a text orjson would read its own way


def _by_orjson(text: bytes) -> Any:
    """orjson's value of `text` where it is the standard library's, else _HAND_OVER."""
    # \u: a key written with escapes would hide from _TYPE_KEY's count (no encoder of ours
    # writes one; a control character in a string does, and is read the slower way).
    if b"\\u" in text or _long_number(text):
        return _HAND_OVER
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _HAND_OVER  # NaN, an infinity, a lone surrogate: the standard library reads them


def exact_loads(text: str) -> Any:
    """json.loads(text), parsed by orjson where that gives the same value."""
    try:
        value = _by_orjson(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate
        value = _HAND_OVER
    return json.loads(text) if value is _HAND_OVER else value


class LedgerTranscoder(JSONTranscoder):
    def encode(self, obj: Any) -> bytes:
        records = obj.get(RECORDS) if type(obj) is dict else None
        if type(records) is list and records:
            try:
                written = orjson.dumps(records, default=_not_plain, option=_PASSTHROUGH)
            except orjson.JSONEncodeError:
                pass
            else:
                # null is where orjson writes NaN and the infinities, which the library keeps.
                if b"null" not in written:
                    rest = super().encode({**obj, RECORDS: _PLACEHOLDER})
                    head, found, tail = rest.partition(_PLACEHOLDER_TEXT)
                    if found:  # the library wrote the placeholder as orjson does: always
                        return head + written + tail
        return super().encode(obj)

    def decode(self, data: bytes) -> Any:
        """What the library's decode gives: orjson's value, with the library's hook applied to
        every object outside lists; the objects in lists (a batch's records) are left as they
        are when every `"_type_"` key of the text was found outside them. Anything else goes to
        the library's decode, which parses the text again."""
        value = _by_orjson(data)
        if value is not _HAND_OVER:
            typed = data.count(_TYPE_KEY)
            if typed == 0:
                return value  # the hook changes no object without the key
            found = [0]
            value = self._hooked(value, found)
            if found[0] == typed:
                return value
        return super().decode(data)

    def _hooked(self, value: Any, found: list[int]) -> Any:
        """`value` with the library's hook applied to each object not inside a list, innermost
        first, as its decoder does; `found[0]` counts those that hold a `_type_` key."""
        if type(value) is not dict:
            return value
        for key, item in value.items():
            if type(item) is dict:
                value[key] = self._hooked(item, found)
        if "_type_" in value:
            found[0] += 1
        return self._decode_obj(value)
