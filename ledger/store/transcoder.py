"""How events become the bytes the log stores: the event store library's JSON transcoder, with a
job batch's records written by orjson.

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
"""

from __future__ import annotations

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


def _not_plain(value: Any) -> Any:
    raise TypeError(type(value).__name__)


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
