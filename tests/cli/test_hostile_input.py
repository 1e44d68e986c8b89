"""Hostile input, on both stores (issue 10): one bad value must never wedge a ledger.

Every command's arguments and every job field get values around every column's limits (2^31,
2^53, 2^63, 2^64, negatives), non-finite and extreme floats, ancient and far-future times, and
text with NUL, newlines, ESC sequences, other C0/C1 controls, bidi overrides and lone
surrogates. Each outcome must be one of:
  - a clean refusal: exit 1, exactly one line on stderr, the log unchanged (or click's usage
    error, exit 2, for a value of the wrong type: also nothing written);
  - accepted, and the ledger still answers every read, update-fshare and rebuild (which gives
    the same tables).
Never a traceback, and nothing printed carries a raw control character to the terminal.

Set FAIRLEDGER_FUZZ_REPORT=path to get the outcome counts per input class as JSON.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ledger import bounds
from ledger.clock import parse_time
from tests.builders import job_record
from tests.conftest import DATA, T0, Store, create_ledger
from tests.templates import built

EXAMPLES = int(os.environ.get("FAIRLEDGER_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same trials on every run: CI is repeatable
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)

# --- hostile values ------------------------------------------------------------------------------
EDGE_INTS = [
    0, -1, -2, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**53 + 1,
    2**63 - 1, 2**63, 2**64, 2**64 + 1, -(2**31), -(2**31) - 1, -(2**63), -(2**63) - 1, 10**30,
]  # fmt: skip
hostile_ints = st.one_of(st.sampled_from(EDGE_INTS), st.integers())
EDGE_FLOATS = [
    "nan", "NaN", "inf", "-inf", "Infinity", "-0.0", "0.0", "1e308", "1.8e308", "-1e308",
    "1e-320", "5e-324", "2147483648.0", "9.3e18", "1e15", "1e28", "0.000001", "1e6", "1000001",
]  # fmt: skip
hostile_floats = st.one_of(
    st.sampled_from(EDGE_FLOATS), st.floats(allow_nan=True, allow_infinity=True).map(repr)
)
EDGE_TEXT = [
    "a\x00b", "\x00", "a\nb", "forged\n  | row", "a\rb", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07",
    "a\x7fb", "a\x9bb", "\x85", "a\u2028b", "a\u202eb", "\ud800", "x" * 300, "é✓日本",
    " ", "", " a", "a,b", "\t", "*", "-1", "unlimited",
]  # fmt: skip
hostile_text = st.one_of(st.sampled_from(EDGE_TEXT), st.text(max_size=12))
NOW = time.time()
EDGE_TIMES = [
    "-1", "-1e308", "0", "1e15", "1e28", "1.8e308", "nan", "inf", "-inf", "1e300",
    str(NOW + 365 * 86400), str(NOW + 2 * 86400), str(NOW), "1700000000", "253402300800",
    "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2023-01-01T00:00:00",
]  # fmt: skip
hostile_times = st.one_of(st.sampled_from(EDGE_TIMES), hostile_floats)

# --- what every outcome must be ------------------------------------------------------------------
OUTCOMES: Counter[tuple[str, str, str]] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    path = os.environ.get("FAIRLEDGER_FUZZ_REPORT")
    if path:
        rows = [
            {"store": k[0], "class": k[1], "outcome": k[2], "trials": n}
            for k, n in sorted(OUTCOMES.items())
        ]
        with open(path, "w") as handle:
            json.dump(rows, handle, indent=1)


def _no_raw_controls(result: Result) -> None:
    for stream in (result.stdout, result.stderr):
        assert not bounds.has_control(stream.replace("\n", "")), stream


class Fuzz:
    """One ledger under attack: each trial is a command that must be refused cleanly or leave
    a ledger that still answers."""

    def __init__(self, store: Store, kind: str) -> None:
        self.store = store
        self.kind = kind
        self.position = store.log_position()
        self.accepted = 0
        self.counter = 0
        self.now = float(T0)  # the ledger's clock: a --now accepted moves it forward

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    def trial(self, *args: str, now: float | None = -1.0, input: str | None = None) -> Result:
        """`now`: the --now to give (default: the ledger's; None: none, e.g. given in args)."""
        now = self.now if now == -1.0 else now
        result = self.store.run(*args, now=now, input=input, expect=None)
        answers = (0, 1, 2, 3, 4) if "check-job" in args else (0, 1, 2)  # 3 held, 4 rejected
        assert result.exit_code in answers, (args, result.exit_code, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args,
            repr(result.exception),
        )
        _no_raw_controls(result)
        if result.exit_code in (1, 2):
            if result.exit_code == 1 and "pop-db" not in args:  # pop-db lists each bad row
                assert result.stderr.count("\n") == 1, (args, result.stderr)
                assert result.stderr.startswith("fairledger: "), (args, result.stderr)
            assert self.store.log_position() == self.position, (args, result.stderr)
            OUTCOMES[(self.store.kind, self.kind, f"refused (exit {result.exit_code})")] += 1
            return result
        position = self.store.log_position()
        if "--now" in args:
            self.now = max(self.now, parse_time(args[args.index("--now") + 1]))
        elif now is not None:
            self.now = max(self.now, now)
        if position != self.position:
            self.position = position
            self.still_answers()
            self.accepted += 1
        OUTCOMES[(self.store.kind, self.kind, "accepted, ledger fine")] += 1
        return result

    def still_answers(self) -> None:
        for args in (
            ("list-users",),
            ("list-banks",),
            ("view-bank", "root", "-t"),
            ("update-fshare",),
            ("export-json",),
        ):
            result = self.store.run(*args, now=self.now, expect=0)
            _no_raw_controls(result)
        json.loads(result.stdout, parse_constant=_no_constant)  # export-json: strict JSON
        self.position = self.store.log_position()

    def rebuilds_the_same(self) -> None:
        """At the end of a class: update-fshare and rebuild work, and rebuild gives the same
        tables as the incremental updates did."""
        self.store.run("update-fshare", now=self.now)
        before = self.store.tables()
        self.store.run("rebuild", now=self.now)
        assert self.store.tables() == before


def _no_constant(name: str) -> Any:
    raise AssertionError(f"export-json emitted {name}")


@pytest.fixture
def site(store: Store) -> Store:
    built(store, _site)
    return store


def _site(store: Store) -> None:
    create_ledger(store)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    store.run("add-user", "-u", "alice", "-B", "A", "--userid", "5001")
    store.run("add-queue", "gold")
    store.run("add-project", "proj")


# --- integers ------------------------------------------------------------------------------------
INT_COMMANDS = [
    ("add-bank", "B{n}", "{v}", "--parent-bank", "root"),
    ("edit-bank", "A", "--shares", "{v}"),
    ("add-user", "-u", "u{n}", "-B", "A", "--shares", "{v}"),
    ("add-user", "-u", "u{n}", "-B", "A", "--userid", "{v}"),
    ("edit-user", "alice", "--max-running-jobs", "{v}"),
    ("edit-user", "alice", "--max-active-jobs", "{v}"),
    ("edit-user", "alice", "--max-nodes", "{v}"),
    ("edit-user", "alice", "--max-cores", "{v}"),
    ("edit-user", "alice", "--max-sched-jobs", "{v}"),
    ("edit-user", "alice", "--userid", "{v}"),
    ("add-queue", "q{n}", "--priority", "{v}"),
    ("edit-queue", "gold", "--priority", "{v}"),
    ("edit-queue", "gold", "--max-running-jobs", "{v}"),
    ("edit-queue", "gold", "--max-nodes-per-job", "{v}"),
    ("add-queue", "q{n}", "--max-time-per-job", "{v}"),
    ("edit-factor", "--factor", "queue", "--weight", "{v}"),
    ("edit-factor", "--factor", "urgency", "--weight", "{v}"),
    ("check-job", "--username", "alice", "--nodes", "{v}"),
    ("check-job", "--username", "alice", "--running", "{v}"),
    ("priority", "--username", "alice", "--urgency", "{v}"),
]


def _fill(template: tuple[str, ...], value: str, n: int) -> list[str]:
    return [part.replace("{v}", value).replace("{n}", str(n)) for part in template]


def test_hostile_integers(site: Store) -> None:
    fuzz = Fuzz(site, "integer arguments")

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        template = data.draw(st.sampled_from(INT_COMMANDS))
        value = data.draw(hostile_ints)
        result = fuzz.trial(*_fill(template, str(value), fuzz.next_id()))
        if result.exit_code == 1 and "out of range" in result.stderr:
            assert str(value) in result.stderr  # the refusal names the value

    trial()
    fuzz.rebuilds_the_same()


def test_hostile_floats(site: Store) -> None:
    fuzz = Fuzz(site, "float arguments")

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        template = data.draw(
            st.sampled_from(
                [
                    ("add-bank", "B{n}", "1", "--parent-bank", "root", "--priority", "{v}"),
                    ("edit-bank", "A", "--priority", "{v}"),
                    ("edit-config", "node_weight={v}"),
                    ("edit-config", "core_weight={v}"),
                    ("edit-config", "gpu_weight={v}"),
                    ("edit-config", "decay_factor={v}"),
                    ("edit-config", "priority_decay_half_life={v}"),
                    ("edit-config", "priority_usage_reset_period={v}"),
                    ("add-queue", "q{n}", "--priority", "{v}"),
                    ("priority", "--username", "alice", "--fairshare", "{v}"),
                ]
            )
        )
        fuzz.trial(*_fill(template, data.draw(hostile_floats), fuzz.next_id()))

    trial()
    fuzz.rebuilds_the_same()


def test_hostile_durations(site: Store) -> None:
    fuzz = Fuzz(site, "decay settings")

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        key = data.draw(
            st.sampled_from(["priority_decay_half_life", "priority_usage_reset_period"])
        )
        number = data.draw(
            st.sampled_from(["0.000001", "1", "59", "60", "1e3", "99999999999", "7"])
        )
        unit = data.draw(st.sampled_from(["", "s", "ms", "m", "h", "d", "w"]))
        fuzz.trial("edit-config", f"{key}={number}{unit}")

    trial()
    fuzz.rebuilds_the_same()


# --- text ----------------------------------------------------------------------------------------
TEXT_COMMANDS = [
    ("add-bank", "{v}", "1", "--parent-bank", "root"),
    ("add-user", "-u", "{v}", "-B", "A"),
    ("add-queue", "{v}"),
    ("add-project", "{v}"),
    ("edit-bank", "A", "--shares", "2", "--reason", "{v}"),
    ("edit-bank", "A", "--shares", "3", "--actor", "{v}"),
    ("add-bank", "B{n}", "1", "--parent-bank", "root", "--reason", "{v}"),
    ("edit-config", "{v}=1"),
    ("view-bank", "{v}"),
    ("view-user", "{v}"),
    ("check-job", "--username", "{v}"),
    ("priority", "--username", "alice", "--queue", "{v}"),
    ("edit-user", "alice", "--queues", "{v}"),
]


def test_hostile_text(site: Store) -> None:
    fuzz = Fuzz(site, "names, reasons, actors")

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        template = data.draw(st.sampled_from(TEXT_COMMANDS))
        fuzz.trial(*_fill(template, data.draw(hostile_text), fuzz.next_id()))

    trial()
    fuzz.rebuilds_the_same()


# --- times ---------------------------------------------------------------------------------------
def test_hostile_times(site: Store) -> None:
    fuzz = Fuzz(site, "--now, --as-of")

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        value = data.draw(hostile_times)
        how = data.draw(st.sampled_from(["now", "as-of", "clear-usage"]))
        if how == "now":
            fuzz.trial(
                "--now",
                value,
                "add-bank",
                f"B{fuzz.next_id()}",
                "1",
                "--parent-bank",
                "root",
                now=None,
            )
        elif how == "as-of":
            fuzz.trial("list-users", "--as-of", value, now=None)
        else:
            fuzz.trial("clear-usage", "A", "--ignore-older-than", value)

    trial()
    fuzz.rebuilds_the_same()


# --- job records ---------------------------------------------------------------------------------
JOB_FIELDS = {
    "id": hostile_ints | hostile_text,
    "userid": hostile_ints,
    "username": hostile_text,
    "bank": hostile_text,
    "queue": hostile_text,
    "project": hostile_text,
    "cluster": hostile_text,
    "t_submit": hostile_times,
    "t_run": hostile_times,
    "t_inactive": hostile_times,
    "nnodes": hostile_ints,
    "ncores": hostile_ints,
    "ngpus": hostile_ints,
    "urgency": hostile_ints,
    "extra": hostile_ints | hostile_floats | hostile_text,
    "R": st.sampled_from(
        [
            '{"version": 1, "execution": {"R_lite": [{"rank": "0-2147483647", '
            '"children": {"core": "0-3"}}]}}',
            '{"version": 1, "execution": {"R_lite": [{"rank": "0-9999999999999999999", '
            '"children": {"core": "0", "gpu": "0-99999999999"}}]}}',
            '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "x"}}]}}',
            "not json",
        ]
    ),
}
NUMERIC = {"t_submit", "t_run", "t_inactive"}


def _job_line(n: int, field: str, value: Any) -> str:
    record = job_record(
        1_000_000 + n, user="alice", bank="A", submit=T0 - 100, end=T0 - 10, seconds=40, ncores=2
    )
    if field in NUMERIC and isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)  # a JSON number, as a site's tool would send it
    record[field] = value
    text = json.dumps(record, allow_nan=True)  # NaN/Infinity literals: Python's json takes them
    return text


def test_hostile_job_fields(site: Store) -> None:
    fuzz = Fuzz(site, "job record fields")

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        field = data.draw(st.sampled_from(sorted(JOB_FIELDS)))
        value = data.draw(JOB_FIELDS[field])
        if field == "t_inactive" and isinstance(value, str) and _finite(value):
            # keep the record consistent but for the value under test
            line = _job_line(fuzz.next_id(), "t_inactive", value)
        else:
            line = _job_line(fuzz.next_id(), field, value)
        fuzz.trial("ingest", "-", input=line + "\n")

    trial()
    fuzz.rebuilds_the_same()


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


FLUX_ROW_VALUES = st.one_of(
    hostile_ints,
    hostile_floats,
    hostile_text,
    st.none(),
    st.sampled_from([b"\x00\xff", '{"attributes": []}', "[" * 5000, 1e400]),
)


def test_hostile_flux_accounting_job_rows(site: Store, tmp_path: Path) -> None:
    """`ingest --format flux-accounting-db`: rows of its jobs table, any column any value."""
    fuzz = Fuzz(site, "flux-accounting jobs rows")
    r_text = '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}]}}'

    @FUZZ
    @given(data=st.data())
    def trial(data: st.DataObject) -> None:
        n = fuzz.next_id()
        row: dict[str, Any] = {
            "id": 2_000_000 + n,
            "userid": 5001,
            "t_submit": T0 - 100,
            "t_run": T0 - 50,
            "t_inactive": T0 - 10,
            "R": r_text,
            "jobspec": '{"attributes": {"system": {"bank": "A"}}}',
            "bank": "A",
            "project": None,
        }
        column = data.draw(st.sampled_from(sorted(row)))
        row[column] = data.draw(FLUX_ROW_VALUES)
        path = tmp_path / f"flux-{n}.db"
        conn = sqlite3.connect(path)
        try:
            with conn:
                conn.execute(f"CREATE TABLE jobs ({', '.join(row)})")
                conn.execute(
                    f"INSERT INTO jobs VALUES ({', '.join('?' * len(row))})", list(row.values())
                )
        except (OverflowError, UnicodeEncodeError):
            assume(False)  # a value no SQLite file (so no flux-accounting database) can hold
        finally:
            conn.close()
        fuzz.trial("ingest", str(path), "--format", "flux-accounting-db")

    trial()
    fuzz.rebuilds_the_same()


# --- the regressions named in issue 10 -----------------------------------------------------------
ISSUE_10 = [
    ("t_inactive", 1e15),
    ("t_inactive", 1.7e308),
    ("t_inactive", math.inf),
    ("t_inactive", 1e28),
    ("nnodes", 2**31),
    ("ngpus", 2**31),
    ("ncores", 2**31),
]


def test_issue_10_job_values_are_refused(site: Store) -> None:
    fuzz = Fuzz(site, "issue 10")
    for n, (field, value) in enumerate(ISSUE_10, start=1):
        result = fuzz.trial("ingest", "-", input=_job_line(n, field, value) + "\n")
        assert result.exit_code == 1, (field, value)
        assert f"line 1: {field}: value" in result.stderr


ISSUE_10_COMMANDS = [
    ("add-bank", "nb", "9223372036854775808", "--parent-bank", "root"),
    ("edit-bank", "A", "--shares", "9223372036854775808"),
    ("add-user", "-u", "bob", "-B", "A", "--shares", "9223372036854775808"),
    ("edit-user", "alice", "--max-running-jobs", "9223372036854775808"),
    ("edit-user", "alice", "--max-nodes", "9223372036854775808"),
    ("edit-factor", "--factor", "queue", "--weight", "9223372036854775808"),
    ("add-queue", "q", "--priority", "9223372036854775808"),
    ("add-bank", "nb", "1", "--parent-bank", "root", "--priority", "nan"),
    ("edit-config", "node_weight=nan"),
    ("edit-config", "priority_decay_half_life=0.000001"),
    ("add-bank", "n\x00b", "1", "--parent-bank", "root"),
    ("add-user", "-u", "al\x00ice", "-B", "A"),
    ("add-queue", "q\x00"),
    ("add-project", "p\x00"),
    ("add-user", "-u", "eve\n  | forged", "-B", "A"),
    ("add-bank", "\x1b[31mred", "1", "--parent-bank", "root"),
    ("edit-bank", "A", "--shares", "5", "--reason", "line one\nline two"),
    ("edit-bank", "A", "--shares", "5", "--reason", "\x1b]0;pwned\x07"),
    ("edit-bank", "A", "--shares", "5", "--actor", "ops\x1b[2J"),
]


def test_issue_10_command_values_are_refused(site: Store) -> None:
    fuzz = Fuzz(site, "issue 10")
    for args in ISSUE_10_COMMANDS:
        result = fuzz.trial(*args)
        assert result.exit_code == 1, (args, result.output)
        if "9223372036854775808" in args:
            assert "9223372036854775808 is out of range" in result.stderr


def test_issue_10_now_a_year_ahead_is_refused(site: Store) -> None:
    fuzz = Fuzz(site, "issue 10")
    ahead = str(time.time() + 365 * 86400)
    result = fuzz.trial("add-bank", "B", "1", "--parent-bank", "root", now=float(ahead))
    assert result.exit_code == 1
    assert result.stderr.startswith("fairledger: --now ") and "in the future" in result.stderr
    fuzz.trial("list-banks", now=time.time() + 3600)  # within the tolerance: fine


def test_issue_10_export_json_is_strict_json(site: Store) -> None:
    site.run("add-bank", "Z", "1", "--parent-bank", "root", "--priority", "2147483647")
    site.run("update-fshare")
    json.loads(site.run("export-json").stdout, parse_constant=_no_constant)


def test_decay_settings_keep_update_fshare_fast(site: Store) -> None:
    site.run("edit-config", "priority_decay_half_life=60", "priority_usage_reset_period=1000m")
    started = time.monotonic()
    site.run("update-fshare")
    site.run("rebuild")
    assert time.monotonic() - started < 30


def test_a_ledger_poisoned_before_bounds_fails_in_one_line(tmp_path: Path) -> None:
    """tests/data/poisoned: written by 0.1.0, a job with t_inactive 1e15 and a bank with 2^63
    shares recorded and then unprojectable. Repairing it is not ours to do here; every command
    must say what is wrong in one line instead of a traceback."""
    db = tmp_path / "ledger.db"
    shutil.copy(DATA / "poisoned" / "ledger-0.1.0.db", db)
    poisoned = Store("sqlite", f"sqlite:///{db}")
    for args in (("list-banks",), ("view-bank", "root", "-t"), ("export-json",), ("rebuild",)):
        result = poisoned.run(*args, now=None, expect=1)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.stderr.count("\n") == 1
        assert "run 'fairledger doctor'" in result.stderr
    # and nothing new of the same kind can be recorded
    good = (DATA / "poisoned" / "bad.jsonl").read_text()
    result = poisoned.run("ingest", "-", input=good, now=None, expect=1)
    assert result.stderr.count("\n") == 1


def test_pop_db_rows_meet_the_same_bounds(site: Store, tmp_path: Path) -> None:
    path = tmp_path / "bank_table.csv"
    path.write_text(
        "bank_id,bank,active,parent_bank,shares,job_usage,priority\n"
        "2,nb,1,root,9223372036854775808,0.0,0.0\n"
        '3,"a\x1b[31mb",1,root,1,0.0,0.0\n'
        "4,ok,1,root,1,0.0,1e400\n"
        "2147483648,big,1,root,1,0.0,0.0\n",
        encoding="utf-8",
    )
    fuzz = Fuzz(site, "issue 10")
    result = fuzz.trial("pop-db", "-c", str(path))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1:] == [
        "  bank_table.csv line 2: shares 9223372036854775808 is out of range (0..2147483647)",
        "  bank_table.csv line 3: invalid bank name: 'a\\x1b[31mb' (control character)",
        "  bank_table.csv line 4: priority inf is not a finite number",
        "  bank_table.csv line 5: bank_id 2147483648 is out of range (1..2147483647)",
    ]


def _huge_jobs(first: int, count: int) -> str:
    """Jobs of the largest charge one job may have (1e12: a million nodes for a million s)."""
    return "".join(
        json.dumps(
            {"id": first + n, "username": "u", "bank": "A", "t_submit": T0 - 2_000_000,
             "t_run": T0 - 2_000_000, "t_inactive": T0 - 1_000_000, "nnodes": 1_000_000,
             "ncores": 1}
        ) + "\n"
        for n in range(count)
    )  # fmt: skip


def test_charges_that_one_user_could_not_sum_in_one_input_are_refused(site: Store) -> None:
    before = site.log_position()
    result = site.run("ingest", "-", input=_huge_jobs(1, 100), expect=1)
    assert "the charges of u/A would total" in result.stderr
    assert site.log_position() == before


def test_charges_that_one_user_could_not_sum_are_refused(site: Store) -> None:
    """Every sum of one user's charges must fit a BIGINT of 1e-5 units (about 9.2e13): 50 jobs
    of 1e12 fit, 50 more would not, in a later input or in the same one; nothing is recorded."""
    site.run("ingest", "-", input=_huge_jobs(1, 50))
    before = site.log_position()
    for jobs in (_huge_jobs(51, 50), _huge_jobs(200, 20) + _huge_jobs(300, 30)):
        result = site.run("ingest", "-", input=jobs, expect=1)
        assert result.stderr.count("\n") == 1
        assert "the charges of u/A would total" in result.stderr
        assert "nothing recorded" in result.stderr
        assert site.log_position() == before
    site.run("update-fshare")  # the ledger still answers
