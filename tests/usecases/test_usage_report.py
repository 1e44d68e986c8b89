"""The usage report's rows from the use case itself: node-time per association, bank or user
in a window, split by job size, on a real SQLite ledger."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from ledger.errors import InvalidValue
from ledger.usecases import users
from ledger.usecases.session import Session
from ledger.usecases.usage_report import UsageRow, usage_report
from tests.conftest import T0
from tests.usecases.ledgers import change, ended, new_ledger, record

HOUR = 3600.0
START, END = T0 + 100, T0 + 8000


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Session]:
    """root -> A (alice 5001, bob 5002), B (carol 5003), with jobs ended in and around the
    window [START, END]."""
    session = new_ledger(tmp_path)
    change(session, lambda s, st: s.add_bank(st, "root", 1, "", None))
    for bank in ("A", "B"):
        change(session, lambda s, st, bank=bank: s.add_bank(st, bank, 1, "root", None))
    for name, uid, bank in (("alice", 5001, "A"), ("bob", 5002, "A"), ("carol", 5003, "B")):
        users.add_user(session, name, bank, uid, {})
    session.set_now(T0 + 9100)
    record(
        session,
        ended(1, 5001, T0 + 7200, HOUR, nnodes=1),  # alice: 1 node-hour
        ended(2, 5001, T0 + 7200, HOUR / 2, nnodes=4),  # alice: 2 node-hours
        ended(3, 5002, T0 + 7000, HOUR / 4, nnodes=16),  # bob: 4 node-hours
        ended(4, 5003, T0 + 7100, HOUR, nnodes=2),  # carol: 2 node-hours
        ended(5, 5001, T0 + 9000, 100),  # ends after the window
        ended(6, 5002, T0 + 50, 10),  # ends before it
    )
    yield session
    session.close()


def rows(report_rows: list[UsageRow]) -> list[tuple[str, tuple[float, ...]]]:
    return [(row.label, row.values) for row in report_rows]


def test_node_time_per_association_largest_first(site: Session) -> None:
    report = usage_report(site, START, END, time_unit="hour")
    assert rows(report.rows) == [("A:bob", (4.0,)), ("A:alice", (3.0,)), ("B:carol", (2.0,))]
    assert (report.total.label, report.total.values) == ("TOTAL", (9.0,))
    assert (report.start, report.end, report.size_bins) == (START, END, ())


def test_per_bank_per_user_and_filtered(site: Session) -> None:
    assert rows(usage_report(site, START, END, report_type="bybank", time_unit="hour").rows) == [
        ("A", (7.0,)),
        ("B", (2.0,)),
    ]
    by_user = usage_report(site, START, END, report_type="byuser", time_unit="min")
    assert rows(by_user.rows) == [("bob", (240.0,)), ("alice", (180.0,)), ("carol", (120.0,))]
    alice = usage_report(site, START, END, username="alice")
    assert rows(alice.rows) == [("A:alice", (3 * HOUR,))]
    assert alice.total.values == (3 * HOUR,)
    assert rows(usage_report(site, START, END, bank="B", time_unit="hour").rows) == [
        ("B:carol", (2.0,))
    ]


def test_split_by_job_size(site: Session) -> None:
    report = usage_report(site, START, END, time_unit="hour", size_bins=(0, 2, 8))
    # A job counts in the largest bin its node count reaches: 16 nodes in 8+, 4 and 2 in 2+.
    assert rows(report.rows) == [
        ("A:bob", (0.0, 0.0, 4.0, 4.0)),
        ("A:alice", (1.0, 2.0, 0.0, 3.0)),
        ("B:carol", (0.0, 2.0, 0.0, 2.0)),
    ]
    assert report.total.values == (1.0, 4.0, 4.0, 9.0)


def test_the_default_window_is_yesterday_in_the_site_zone(site: Session) -> None:
    def yesterday(zone: str) -> tuple[float, float]:
        now = datetime.fromtimestamp(T0 + 9100, tz=ZoneInfo(zone))
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        return (midnight - timedelta(days=1)).timestamp(), midnight.timestamp()

    report = usage_report(site)
    assert (report.start, report.end) == yesterday("UTC")
    site.change(lambda s, stamp: s.edit_config(stamp, [("timezone", "Pacific/Auckland")]))
    report = usage_report(site)
    assert (report.start, report.end) == yesterday("Pacific/Auckland") != yesterday("UTC")


def test_a_job_counts_for_the_association_its_uid_resolves_to_now(site: Session) -> None:
    record(site, ended(7, 5004, T0 + 7500, HOUR))
    # No association holds uid 5004 yet: the job is shown under its uid, in no bank.
    report = usage_report(site, START, END, time_unit="hour")
    assert (":5004", (1.0,)) in rows(report.rows)
    site.set_now(T0 + 9200)
    users.add_user(site, "dave", "B", 5004, {})
    report = usage_report(site, START, END, time_unit="hour")
    assert ("B:dave", (1.0,)) in rows(report.rows)
    assert ":5004" not in [row.label for row in report.rows]


def test_an_end_before_the_start_is_refused(site: Session) -> None:
    with pytest.raises(InvalidValue, match="^invalid range: end .* is before start "):
        usage_report(site, END, START)
