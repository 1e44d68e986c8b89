"""view-job-records: flux-accounting's default listing and its -o formats (Python format specs,
every {jobid.FORM}, flux's conversions), byte for byte, on both stores."""

from __future__ import annotations

import json
import tempfile

import pytest

import cli.echo
import ledger.spill
from tests.conftest import T0, Store, create_ledger
from tests.templates import built

# Two IDs whose every form flux-core's own test table gives (libjob/test/job.c).
BIG_ID = 6787342413402046
SMALL_ID = 65535


def site_with_jobs(store: Store, recorded_at: float = T0) -> None:
    built(store, _site_with_jobs, recorded_at)


def _site_with_jobs(store: Store, recorded_at: float) -> None:
    create_ledger(store)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    store.run("add-user", "-u", "alice", "-i", "5001", "-B", "A")
    jobs = [
        {
            "id": BIG_ID,
            "userid": 5001,
            "bank": "A",
            "project": "climate",
            "t_submit": T0 - 1000,
            "t_run": T0 - 900.25,
            "t_inactive": T0 - 500.5,
            "nnodes": 2,
            "ncores": 4,
        },
        {
            "id": SMALL_ID,
            "userid": 5001,
            "t_submit": T0 - 1000,
            "t_run": T0 - 800,
            "t_inactive": T0 - 400,
            "nnodes": 1,
            "ncores": 1,
        },
    ]
    store.run("ingest", "-", input="".join(json.dumps(j) + "\n" for j in jobs), now=recorded_at)


@pytest.mark.parametrize("batch", [ledger.spill.BATCH, 1])
def test_default_listing_is_flux_accountings(
    store: Store, batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of one row: every row goes to disk and back before anything is printed.
    monkeypatch.setattr(ledger.spill, "BATCH", batch)
    monkeypatch.setattr(cli.echo, "ECHO_LINES", batch)
    site_with_jobs(store)
    # Columns padded to their widest value, floats with two decimals, " | " between, no rule
    # line, and the blank line flux-accounting's print() of its newline-ended table leaves.
    expected = (
        "jobid      | username | userid | t_submit      | t_run         | t_inactive    "
        "| nnodes | project | bank | requested_duration | actual_duration | duration_delta\n"
        "ƒuzzybunny | alice    | 5001   | 1699999000.00 | 1699999099.75 | 1699999499.50 "
        "| 2      | climate | A    | 0.00               | 399.75          | -399.75       \n"
        "ƒLUv       | alice    | 5001   | 1699999000.00 | 1699999200.00 | 1699999600.00 "
        "| 1      |         |      | 0.00               | 400.00          | -400.00       \n"
        "\n"
    )
    assert store.run("view-job-records").stdout == expected


def test_format_with_python_specs_and_every_jobid_form(store: Store) -> None:
    site_with_jobs(store)
    out = store.run(
        "view-job-records",
        "-o",
        "{jobid.dec:<17}|{jobid.hex}|{jobid.dothex}|{jobid.kvs}|{jobid.f58plain}|{jobid.f58}"
        "|{jobid:>11}",
    ).stdout
    assert out == (
        "jobid.dec        |jobid.hex|jobid.dothex|jobid.kvs|jobid.f58plain|jobid.f58|      jobid\n"
        "6787342413402046 |0x181d0d4d850fbe|0018.1d0d.4d85.0fbe|job.0018.1d0d.4d85.0fbe"
        "|fuzzybunny|ƒuzzybunny| ƒuzzybunny\n"
        "65535            |0xffff|0000.0000.0000.ffff|job.0000.0000.0000.ffff"
        "|fLUv|ƒLUv|       ƒLUv\n"
        "\n"
    )
    words = store.run("view-job-records", "-o", "{jobid.words} {jobid.emoji}").stdout
    assert words.splitlines() == [
        "jobid.words jobid.emoji",
        "cake-plume-nepal--neuron-pencil-academy 👴😱🔚🎮🕙🚩",
        "nevada-archive-academy--academy-academy-academy 💁📚",
        "",
    ]
    # flux-accounting's t1011: a float spec; the header keeps only the alignment and width.
    specs = store.run("view-job-records", "-o", "{userid:<8} || {t_inactive:<15.3f}|").stdout
    assert specs.splitlines() == [
        "userid   || t_inactive     |",
        "5001     || 1699999499.500 |",
        "5001     || 1699999600.000 |",
        "",
    ]


def test_flux_conversions(store: Store) -> None:
    site_with_jobs(store)
    out = store.run(
        "view-job-records", "-o", "{actual_duration!H} {actual_duration!F} {project:h}|"
    ).stdout
    assert out.splitlines() == [
        "actual_duration actual_duration project|",
        "0:06:40 6.662m climate|",  # 399.75 s: 0:06:40; 6.6625 m is a hair below in binary
        "0:06:40 6.667m -|",  # no project: "-" with the h suffix
        "",
    ]


def test_format_checks_fields_against_the_columns(store: Store) -> None:
    site_with_jobs(store)
    named = store.run("view-job-records", "-o", "{jobid:<20} | {nnodes:<8} | {charge}").stdout
    assert named.splitlines()[1] == "ƒuzzybunny           | 2        | 799.5"  # 2 nodes x 399.75 s


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("{jobid.foo}", "Unknown format field: jobid.foo (available: jobid, username"),
        ("{foo}", "Unknown format field: foo ("),
        ("{}", "Unknown format field: {} ("),
        ("{jobid:d}", "field jobid: Unknown format code 'd' for object of type 'str'"),
        ("{t_run", "invalid format string '{t_run': expected '}' before end of string"),
        ("{t_run!x}", "unknown conversion !x"),
        ("{nnodes:{userid}}", "nested fields in a spec"),
    ],
)
def test_a_bad_format_is_one_line(store: Store, fmt: str, message: str) -> None:
    site_with_jobs(store)
    result = store.run("view-job-records", "-o", fmt, expect=1)
    assert result.stdout == ""
    assert result.stderr.startswith("fairledger: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_row_the_format_refuses_prints_nothing_of_the_rows_before_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first row is on disk when the second fails, and lines would be written one by one.
    monkeypatch.setattr(ledger.spill, "BATCH", 1)
    monkeypatch.setattr(cli.echo, "ECHO_LINES", 1)
    site_with_jobs(store)
    # A requested duration is kept as sent; 1e20 s is past what !H (a timedelta) can show.
    job = {"id": 3, "userid": 5001, "t_run": T0, "t_inactive": T0 + 10, "nnodes": 1}
    job |= {"t_submit": T0, "ncores": 1, "requested_duration": 1e20}
    store.run("ingest", "-", input=json.dumps(job) + "\n", now=T0 + 20)
    result = store.run("view-job-records", "-o", "{jobid.dec} {requested_duration!H}", expect=1)
    assert result.stdout == ""
    assert result.stderr.startswith(
        "fairledger: view-job-records: ValueError: invalid format string "
        "'{jobid.dec} {requested_duration!H}': field requested_duration: "
    )
    assert result.stderr.count("\n") == 1


def test_no_room_for_the_listing_is_one_line(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    site_with_jobs(store)
    monkeypatch.setattr(tempfile, "tempdir", "/nonexistent/fairledger-tmp")  # as a full TMPDIR
    for shown in ((), ("--json",), ("-o", "{jobid}")):
        result = store.run("view-job-records", *shown, expect=1)
        assert result.stdout == ""
        assert result.stderr == (
            "fairledger: cannot write a temporary file in /nonexistent/fairledger-tmp: "
            "No such file or directory (set TMPDIR to a directory with room)\n"
        )


def test_a_bad_format_is_refused_with_no_jobs_too(store: Store) -> None:
    create_ledger(store)
    refused = store.run("view-job-records", "-o", "{foo}", expect=1)
    assert "Unknown format field: foo" in refused.stderr


def test_format_answers_as_of(store: Store) -> None:
    site_with_jobs(store, recorded_at=T0 + 100)
    shown = ("view-job-records", "-o", "{jobid.dec}", "--as-of")
    before = store.run(*shown, str(T0 + 50), now=T0 + 200).stdout
    assert before == "jobid.dec\n\n"
    now = store.run(*shown, str(T0 + 100), now=T0 + 200).stdout
    assert now == f"jobid.dec\n{BIG_ID}\n{SMALL_ID}\n\n"


def test_parses_every_jobid_form(store: Store) -> None:
    site_with_jobs(store)
    for form in ("0018.1d0d.4d85.0fbe", "job.0018.1d0d.4d85.0fbe", "fuzzybunny", "👴😱🔚🎮🕙🚩"):
        rows = json.loads(store.run("view-job-records", "-j", form, "--json").stdout)
        assert [r["jobid"] for r in rows] == ["ƒuzzybunny"]
