"""One time syntax for every time option (issue 12), on both stores: each form through each kind
of option, the site's `timezone` config, and the refusals (epoch milliseconds, out of range, an
as-of after the ledger's clock, a diff backwards)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_ingest import all_tables, job
from tests.conftest import T0, Store, create_ledger, refusal
from tests.templates import built

NOW = T0 + 90_000  # 2023-11-15T23:13:20Z: the ledger's clock for the reads below
X = T0 + 2_800  # 2023-11-14T23:00:00Z: the instant every form below names
MIDNIGHT = T0 + 6_400  # 2023-11-15T00:00:00Z

# X in every form, the site's timezone being UTC (the default). Durations are before NOW.
FORMS_OF_X = [
    "1700002800",
    "1700002800.0",
    "2023-11-14T23:00:00Z",
    "2023-11-14T23:00:00+00:00",
    "2023-11-15T00:00:00+01:00",
    "2023-11-14T23:00:00",  # ISO without a zone: the site's
    "2023-11-14 23:00:00",
    "2023-11-14 23:00 UTC",
    "11/14/23 11pm",  # month first, as flux-accounting reads it
    "11/14/2023 23:00",
    "Nov 14, 2023 11pm",
    "87200s",  # NOW - X
    "87200s ago",
    "-87200s",
]


@pytest.fixture
def site(store: Store) -> Store:
    built(store, _site)
    return store


def _site(s: Store) -> None:
    """root -> A: alice (from T0), bob (T0+1000), carol (T0+5000, after X); alice's jobs 1..3
    end at T0+100 (before X), T0+3700 and T0+86400 (after), each 10 s on one node."""
    s.run("create-db")
    s.run("add-bank", "root", "1")
    s.run("add-bank", "A", "1", "--parent-bank", "root")
    s.run("add-user", "-u", "alice", "-i", "5001", "-B", "A")
    s.run("add-user", "-u", "bob", "-i", "5002", "-B", "A", now=T0 + 1000)
    s.run("add-user", "-u", "carol", "-i", "5003", "-B", "A", now=T0 + 5000)
    jobs = [job(1, end=T0 + 100), job(2, end=T0 + 3700), job(3, end=T0 + 86_400)]
    s.run("ingest", "-", input="".join(f"{json.dumps(j)}\n" for j in jobs), now=NOW)


def job_ids(store: Store, *args: str) -> list[str]:
    rows = json.loads(store.run("view-job-records", "--json", *args, now=NOW).stdout)
    return sorted(str(int(r["jobid"][1:]) - 1) for r in rows)  # ƒ2 is job 1 (f58)


def reads(store: Store, text: str) -> dict[str, Any]:
    """What each kind of time option answers for `text`."""
    return {
        "after-start": job_ids(store, "-a", text),
        "before-end": job_ids(store, "--before-end-time", text),
        "usage-report": store.run("view-usage-report", "-s", text, "-e", str(NOW), now=NOW).stdout,
        "history": [
            e["position"]
            for e in json.loads(store.run("history", "--since", text, "--json", now=NOW).stdout)
        ],
        "as-of": sorted(
            u["username"]
            for u in json.loads(store.run("list-users", "--json", "--as-of", text, now=NOW).stdout)
        ),
        "diff": store.run("diff", "--from", text, now=NOW).stdout,
    }


def cleared_before(store: Store, text: str) -> float:
    store.run("clear-usage", "A", "--ignore-older-than", text, now=NOW)
    entries = json.loads(store.run("history", "--bank", "A", "--json", now=NOW).stdout)
    return float(entries[-1]["changes"]["ignore_older_than"][1])


def test_one_instant_in_every_form_through_every_kind_of_option(site: Store) -> None:
    epoch = reads(site, str(X))
    # What X means, known from the site: jobs 2 and 3 started after it, job 1 ended before it;
    # carol joined after it; 20 node-seconds (jobs 2 and 3) ended between X and NOW.
    assert epoch["after-start"] == ["2", "3"] and epoch["before-end"] == ["1"]
    assert epoch["as-of"] == ["alice", "bob"]
    assert "  + user carol in A" in epoch["diff"].splitlines()
    assert epoch["usage-report"].splitlines()[-1].split() == ["TOTAL", "20.00"]
    assert epoch["history"] and all(
        e["timestamp"] >= X
        for e in json.loads(site.run("history", "--json", "--since", str(X), now=NOW).stdout)
    )
    for text in FORMS_OF_X:
        assert reads(site, text) == epoch, text
    for text in ("1700002800", "11/14/23 11pm", "2023-11-15T00:00:00+01:00", "87200s ago"):
        assert cleared_before(site, text) == X, text


def test_a_bare_date_is_its_midnight(site: Store) -> None:
    for text in ("2023-11-15", "11/15/23", "11/15/2023", "Nov 15, 2023"):
        assert job_ids(site, "-b", text) == ["1", "2"], text
        assert cleared_before(site, text) == MIDNIGHT, text


def read_models_but_config(store: Store) -> dict[str, Any]:
    """Every read model (usage, periods, fair-share checkpoints), but the config table and the
    log's index, which a config change rightly moves."""
    return {k: v for k, v in all_tables(store).items() if k not in ("config_table", "log_index")}


def test_the_site_timezone_moves_zone_less_times_only(site: Store) -> None:
    assert json.loads(site.run("view-config", "timezone", "--json").stdout) == [
        {"key": "timezone", "value": "UTC"}
    ]
    usage_before = read_models_but_config(site)
    site.run("edit-config", "timezone=Europe/Berlin", now=NOW)
    # Recorded as a config change like any other; no usage is recomputed for it.
    (entry,) = json.loads(site.run("history", "--config", "--since", str(NOW), "--json").stdout)
    assert (entry["action"], entry["changes"]) == (
        "edit-config",
        {"value": ["UTC", "Europe/Berlin"]},
    )
    assert read_models_but_config(site) == usage_before
    configs = json.loads(site.run("list-configs", "--json", now=NOW).stdout)
    assert configs[-1] == {"key": "timezone", "value": "Europe/Berlin"}
    before = json.loads(
        site.run("view-config", "timezone", "--json", "--as-of", str(X), now=NOW).stdout
    )
    assert before == [{"key": "timezone", "value": "UTC"}]
    # Berlin is UTC+1 in November: its midnight of the 15th is X.
    for text in ("2023-11-15 00:00:00", "2023-11-15", "11/15/23", "Nov 15, 2023 12am"):
        assert job_ids(site, "-b", text) == ["1"], text
        assert reads(site, text)["as-of"] == ["alice", "bob"], text
    for text in ("2023-11-14T23:00:00Z", "1700002800", "87200s"):  # a zone or none needed
        assert job_ids(site, "-b", text) == ["1"], text
    # --now without a zone is in the site's zone too (it is read once the ledger is open).
    site.run("--now", "2023-11-16 01:00", "add-bank", "Z", "1", "--parent-bank", "root", now=None)
    last = json.loads(site.run("history", "--bank", "Z", "--json", now=None).stdout)[-1]
    assert last["timestamp"] == T0 + 92_800  # 2023-11-16T00:00:00Z


def test_a_timezone_must_be_an_iana_zone(ledger_store: Store) -> None:
    before = ledger_store.log_position()
    for bad in ("Mars/Base", "europe/berlin", "localtime", "+01:00", ""):
        result = ledger_store.run("edit-config", f"timezone={bad}", expect=1)
        assert result.stderr == (
            f"fairledger: edit-config: ValueError: invalid timezone: {bad!r} (an IANA zone name "
            "such as UTC or "
            "Europe/Berlin)\n"
        )
    assert ledger_store.log_position() == before
    ledger_store.run("edit-config", "timezone=America/New_York")
    assert ledger_store.run("edit-config", "timezone=America/New_York").stderr == (
        "config: nothing to change\n"
    )
    # delete-config takes it back to its default; add-config and edit-config check it alike,
    # recorded or not: it is never free text.
    ledger_store.run("delete-config", "timezone")
    assert (
        json.loads(ledger_store.run("view-config", "timezone", "--json").stdout)[0]["value"]
        == "UTC"
    )
    before = ledger_store.log_position()
    refused_add = ledger_store.run("add-config", "timezone=Mars/Base", expect=1).stderr
    assert refused_add.startswith("fairledger: add-config: ValueError: invalid timezone: 'Mars/")
    ledger_store.run("add-config", "timezone=Asia/Tokyo")
    refused_edit = ledger_store.run("edit-config", "timezone=Mars/Base", expect=1).stderr
    assert refused_edit.startswith("fairledger: edit-config: ValueError: invalid timezone: 'Mars/")
    assert ledger_store.log_position() == before + 1
    value = json.loads(ledger_store.run("view-config", "timezone", "--json").stdout)[0]["value"]
    assert value == "Asia/Tokyo"


def test_now_takes_every_form(store: Store) -> None:
    store.run("--now", "11/14/23 10:13:20pm", "create-db", now=None)
    store.run("--now", "2023-11-14 22:20", "add-bank", "root", "1", now=None)
    store.run("--now", "1h", "add-bank", "A", "1", "--parent-bank", "root", now=None)
    times = [e["timestamp"] for e in json.loads(store.run("history", "--json").stdout)]
    assert times[0] == T0 and times[-2] == T0 + 400
    assert abs(times[-1] - (time.time() - 3600)) < 60  # a duration is before the real clock


# --- refusals ------------------------------------------------------------------------------------
def refused(store: Store, *args: str, code: int = 1, now: float | None = NOW) -> str:
    before = store.log_position()
    result = store.run(*args, expect=code, now=now)
    assert result.stdout == "" and "Traceback" not in result.output
    assert store.log_position() == before
    if code == 1:
        assert result.stderr.startswith("fairledger: ") and result.stderr.count("\n") == 1
    return result.stderr


def test_epoch_milliseconds_are_refused_by_every_kind_of_option(site: Store) -> None:
    message = (
        "time 1700002800000 looks like epoch milliseconds: give epoch seconds "
        "(below 1e11, the year 5138), e.g. 1700002800"
    )
    # flux-accounting's commands carry its exception type; fairledger's own (history, diff)
    # and the global --now print the message alone.
    for args, expected in (
        (("list-users", "--as-of", "1700002800000"), refusal("list-users", message)),
        (("view-job-records", "-b", "1700002800000"), refusal("view-job-records", message)),
        (("view-usage-report", "-s", "1700002800000"), refusal("view-usage-report", message)),
        (("history", "--since", "1700002800000"), f"fairledger: {message}\n"),
        (("diff", "--from", "1700002800000"), f"fairledger: {message}\n"),
        (
            ("clear-usage", "A", "--ignore-older-than", "1700002800000"),
            refusal("clear-usage", message),
        ),
        (
            ("--now", "1700002800000", "add-bank", "B", "1", "--parent-bank", "root"),
            f"fairledger: {message}\n",
        ),
    ):
        assert refused(site, *args, now=None if args[0] == "--now" else NOW) == expected, args


def test_times_out_of_range_are_refused(site: Store) -> None:
    assert refused(site, "view-job-records", "-a", "-5") == refusal(
        "view-job-records", "time -5 is before 1970-01-01 (epoch seconds must be >= 0)"
    )
    # The range is checked once the site's zone is applied: west of UTC this is year 10000.
    site.run("edit-config", "timezone=America/New_York", now=NOW)
    assert "out of range" in refused(site, "view-job-records", "-b", "9999-12-31 23:59:59")
    assert "out of range" in refused(site, "history", "--since", "9999-12-31T23:59:59-05:00")


def test_as_of_after_the_ledgers_clock_is_refused(site: Store) -> None:
    assert refused(site, "list-users", "--as-of", str(NOW + 1)) == (
        "fairledger: list-users: ValueError: --as-of 1700090001 (2023-11-15T23:13:21+00:00) is "
        "after the ledger's "
        "clock (2023-11-15T23:13:20+00:00): its answer could still change\n"
    )
    assert "after the ledger's clock" in refused(site, "view-bank", "A", "--as-of", "11/16/23")
    assert "--to 2023-11-16" in refused(site, "diff", "--from", str(X), "--to", "2023-11-16")
    # At the clock itself the answer is final.
    site.run("list-users", "--as-of", str(NOW), now=NOW)
    site.run("list-users", "--as-of", "0s", now=NOW)


def test_diff_from_after_to_is_refused(site: Store) -> None:
    assert refused(site, "diff", "--from", "2023-11-15", "--to", "11/14/23 11pm") == (
        "fairledger: --from 2023-11-15 (2023-11-15T00:00:00+00:00) is after "
        "--to 11/14/23 11pm (2023-11-14T23:00:00+00:00)\n"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("8am", "give a year, a month and a day"),
        ("Jan 1", "give a year, a month and a day"),
        ("2024-01-01 08:00 EST", "zone EST is ambiguous"),
        ("yesterday", "epoch seconds, ISO 8601"),
    ],
)
def test_malformed_times_are_usage_errors_naming_the_text(
    ledger_store: Store, text: str, why: str
) -> None:
    for args in (
        ("list-users", "--as-of", text),
        ("view-job-records", "-a", text),
        ("history", "--until", text),
        ("--now", text, "list-banks"),
    ):
        err = refused(ledger_store, *args, code=2, now=None)
        assert f"invalid time: {text!r} (" in err and why in err, args


def test_a_set_timezone_survives_export_db_and_pop_db(ledger_store: Store, tmp_path: Path) -> None:
    ledger_store.run("edit-config", "timezone=Asia/Tokyo")
    ledger_store.run("export-db", "--dir", str(tmp_path))
    rows = (tmp_path / "config_table.csv").read_text().splitlines()
    assert rows[-1] == "timezone,Asia/Tokyo"
    other = Store("sqlite", f"sqlite:///{tmp_path / 'other.db'}")
    create_ledger(other)
    other.run("pop-db", "-c", str(tmp_path / "config_table.csv"))
    assert (
        json.loads(other.run("view-config", "timezone", "--json").stdout)[0]["value"]
        == "Asia/Tokyo"
    )
