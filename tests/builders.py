"""Test data builders shared by the test suites: one job record, as ingest reads it.

Each test file had its own `job()`; this one covers them all. A record names its user by
`user` (and `bank`) or by `userid`; it ran `seconds` up to `end` on `nnodes` nodes and `ncores`
cores; `submit` is there only when given; `fields` add or override anything (a cluster, a
queue, a hostile value). Keys come in one order, the one ingest's examples use, so a record
built here prints as the old builders' did.
"""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import T0


def job_record(
    job_id: Any,
    *,
    end: float = T0,
    seconds: float = 10,
    submit: float | None = None,
    user: str | None = None,
    bank: str | None = None,
    userid: int | None = None,
    nnodes: int = 1,
    ncores: int = 1,
    **fields: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {"id": job_id}
    if user is not None:
        record["username"] = user
    if bank is not None:
        record["bank"] = bank
    if userid is not None:
        record["userid"] = userid
    if submit is not None:
        record["t_submit"] = submit
    record.update(t_run=end - seconds, t_inactive=end, nnodes=nnodes, ncores=ncores)
    record.update(fields)
    return record


def job_line(job_id: Any, **kwargs: Any) -> str:
    """job_record as one JSON line (without its newline); NaN and Infinity are written as
    Python's json writes them, for hostile input."""
    return json.dumps(job_record(job_id, **kwargs), allow_nan=True)


def stored_record(job_id: int = 1, **fields: Any) -> dict[str, Any]:
    """One job record as the log stores it (ledger.ingest.to_record's shape, charge included),
    with values as the bench's jobs have them; `fields` add or override anything."""
    return {
        "cluster": "cluster",
        "id": str(job_id),
        "t_submit": 1699997616.628,
        "t_run": 1699998661.441,
        "t_inactive": 1700000110.223,
        "nnodes": 16,
        "ncores": 512,
        "ngpus": 0,
        "charge": 23180.512,
        "userid": 12854,
        "bank": "bank14_g354",
        **fields,
    }
