"""A job's digest is the sha256 of one fixed text: the record's own fields as compact JSON with
sorted keys (non-ASCII escaped), without the fields recording derives. Every digest already
stored (job_keys) was made so: a different text would turn each re-ingested job into a
conflict."""

from __future__ import annotations

import hashlib

from ledger.chain import record_digest


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
