"""A listing held on disk (ledger.spill) prints what the same rows held in memory print: the JSON
of json.dumps(indent=2) and the padded table, whatever the rows and however many a batch
holds."""

from __future__ import annotations

import json
import resource
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ledger.spill
from cli.jobs import ALL_JOB_COLUMNS, FLOAT_JOB_COLUMNS, JOB_COLUMNS, _default_listing
from cli.output import Output
from cli.record_format import RecordFormat
from ledger.errors import NoScratchSpace

COLUMNS = ["username", "userid", "shares", "usage"]
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=12),
)
rows = st.lists(st.fixed_dictionaries({c: values for c in COLUMNS}), max_size=25)


@pytest.mark.parametrize("batch", [1, 3, ledger.spill.BATCH])
@given(listed=rows, as_json=st.booleans(), fields=st.sampled_from([None, "usage,username"]))
def test_a_spooled_listing_is_the_listing(
    batch: int, listed: list[dict[str, Any]], as_json: bool, fields: str | None
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ledger.spill, "BATCH", batch)
        out = Output(as_json, None, fields)
        spooled = "\n".join(out.spooled(iter(listed), COLUMNS))
    assert spooled == out.render(listed, COLUMNS)


def test_the_json_of_no_rows_and_of_one_is_json_dumps() -> None:
    out = Output(True, None, None)
    assert "\n".join(out.spooled(iter([]), COLUMNS)) == "[]"
    row = {"username": "a\nb", "userid": 1, "shares": 1.5, "usage": None}
    assert "\n".join(out.spooled(iter([row]), COLUMNS)) == json.dumps([row], indent=2)


def test_unknown_fields_are_refused_before_a_row_is_read() -> None:
    def never() -> Any:
        raise AssertionError("a row was read")
        yield

    with pytest.raises(Exception, match="invalid fields: nope"):
        Output(False, None, "nope").spooled(never(), COLUMNS)


def test_a_temporary_file_that_cannot_be_written_is_one_ledger_error() -> None:
    # The process may write no file past 64 KB (Python ignores SIGXFSZ, so the write fails
    # with EFBIG), as a full TMPDIR would refuse it.
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    spill = ledger.spill.Spill()
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))
    try:
        with pytest.raises(NoScratchSpace, match=r"^cannot write a temporary file in .*TMPDIR"):
            for n in range(100_000):
                spill.add(("x" * 20, n))
            list(spill.replay())
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        spill.__exit__(None, None, None)


job_rows = st.lists(
    st.fixed_dictionaries(
        {
            "jobid": st.text(min_size=1, max_size=10),
            "username": st.none() | st.text(max_size=12),
            "userid": st.none() | st.integers(min_value=0, max_value=2**31),
            "nnodes": st.integers(min_value=0, max_value=10**6),
            "project": st.none() | st.text(max_size=12),
            "bank": st.none() | st.text(max_size=12),
            **{
                column: st.floats(allow_nan=False, allow_infinity=False, width=64)
                for column in FLOAT_JOB_COLUMNS
            },
        }
    ),
    max_size=20,
)


@given(listed=job_rows)
def test_the_default_listing_is_the_format_flux_accounting_builds(
    listed: list[dict[str, Any]],
) -> None:
    """Beside the listing as flux-accounting makes it: the format string of each column at
    its widest value (str() of it; floats to two decimals), applied row by row by -o's own
    formatter."""
    widths = {c: len(c) for c in JOB_COLUMNS}
    shown = [{c: "" if v is None else v for c, v in row.items()} for row in listed]
    for row in shown:
        for c in JOB_COLUMNS:
            text = f"{row[c]:.2f}" if c in FLOAT_JOB_COLUMNS else str(row[c])
            widths[c] = max(widths[c], len(text))
    fmt = " | ".join(
        f"{{{c}:<{widths[c]}.2f}}" if c in FLOAT_JOB_COLUMNS else f"{{{c}:<{widths[c]}}}"
        for c in JOB_COLUMNS
    )
    reference = RecordFormat(fmt, ALL_JOB_COLUMNS)
    expected = [reference.header()] + [reference.line(row) for row in shown]
    assert list(_default_listing(iter(listed))) == expected
