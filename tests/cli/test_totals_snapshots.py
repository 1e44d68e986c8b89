"""Copies of the period totals (projections.writers.totals_snapshots) leave every past moment's
usage exactly what the jobs recorded up to it give, whichever base is nearest to it (a copy
before, a copy after, today's totals or the jobs alone), on both stores; a rebuild makes the
same copies as the commands did one by one.

The copies are taken every SNAPSHOT_EVERY_JOBS jobs (250,000); here every 3, so that a short
history holds many. The oracle groups the jobs up to the moment and reads no copy."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.site_usage import association_usage, window
from ledger.store.application import Ledger
from ledger.store.connections import Connection, parse_store_url
from projections.queries.as_of import periods_current, site_state_at
from projections.writers import totals_snapshots, usage_tables
from tests.builders import job_line
from tests.cli.test_checkpoints import fresh_ledger
from tests.conftest import T0, Store

SPACING = 3
HALF_LIFE = 1000  # seconds: a period every 1,000 s, so a short history spans many
RESET = 3000  # three periods count at a time: a copy holds only those and later ones
USERS = ("alice", "bob", "carol")

Action = tuple[str, int]


def site(store: Store) -> None:
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    for uid, user in enumerate(USERS):
        store.run("add-user", "-u", user, "-B", "A", "-i", str(3000 + uid))
    store.run("edit-config", f"priority_usage_reset_period={RESET}")
    store.run("edit-config", f"priority_decay_half_life={HALF_LIFE}")


def run_history(store: Store, actions: list[Action]) -> None:
    site(store)
    when = T0 + 100
    job_id = 0
    for action, n in actions:
        when += 700
        if action == "jobs":
            lines = []
            for k in range(n):
                job_id += 1
                user = USERS[(job_id + k) % len(USERS)]
                # Some end in an earlier period than the batch is recorded in.
                end = when - 10 - 900 * (k % 3)
                lines.append(job_line(job_id, user=user, bank="A", end=end, seconds=40 + k))
            store.run("ingest", "-", input="\n".join(lines) + "\n", now=when)
        elif action == "fshare":
            store.run("update-fshare", now=when)
        else:  # a new half-life cuts the periods anew (a rebin)
            store.run("edit-config", f"priority_decay_half_life={HALF_LIFE + 100 * n}", now=when)


def snapshot_rows(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    return {
        name: sorted(tuple(r) for r in conn.rows(f"SELECT * FROM {name}"))
        for name in totals_snapshots.TABLES
    }


def check_every_moment(store: Store) -> int:
    """Compare each log position's usage with the oracle's; return the copies held."""
    config = parse_store_url(store.url)
    ledger = Ledger(config)
    conn = Connection(config)
    try:
        for position, at, version in conn.rows(
            "SELECT position, at, site_version FROM log_index ORDER BY position"
        ):
            state = site_state_at(ledger, int(version))
            current = periods_current(conn, state)
            first, last = window(state, float(at))
            jobs = usage_tables._job_totals(conn, state, first, last, int(position), None, current)
            cleared = usage_tables._cleared_totals(
                conn, state, state.all_associations(), first, last, int(position), current
            )
            expected = association_usage(state, jobs, float(at), cleared)
            got = usage_tables.usage_at(conn, state, float(at), int(position), current)
            assert got == expected, f"position {position}"
        return len(conn.rows("SELECT position FROM period_totals_snapshot_marks"))
    finally:
        conn.close()
        ledger.close()


ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("jobs"), st.integers(1, 4)),
        st.tuples(st.just("fshare"), st.just(0)),
        st.tuples(st.just("half-life"), st.integers(1, 3)),
    ),
    min_size=1,
    max_size=14,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=ACTIONS)
@example(
    actions=[
        ("jobs", 4),
        ("jobs", 2),
        ("fshare", 0),
        ("jobs", 3),
        ("jobs", 1),
        ("jobs", 4),
        ("fshare", 0),
        ("jobs", 2),
        ("jobs", 3),
    ]
)
# A rebin in the same fold as the copy before it: the rebuild must space the next copy as the
# commands did, from no copy at all.
@example(actions=[("jobs", 2), ("jobs", 2), ("half-life", 1), ("jobs", 1), ("jobs", 2)])
def test_every_past_moment_has_the_totals_of_its_jobs(
    store: Store, monkeypatch: pytest.MonkeyPatch, actions: list[Action]
) -> None:
    monkeypatch.setattr(totals_snapshots, "SNAPSHOT_EVERY_JOBS", SPACING)
    with fresh_ledger(store) as example:
        run_history(example, actions)
        check_every_moment(example)
        conn = Connection(parse_store_url(example.url))
        try:
            made = snapshot_rows(conn)
        finally:
            conn.close()
        example.run("rebuild", now=None)
        conn = Connection(parse_store_url(example.url))
        try:
            assert snapshot_rows(conn) == made
        finally:
            conn.close()


def test_a_long_history_holds_copies_and_reads_them_exactly(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explicit case: 20 batches of 2 jobs and no rebin. A copy is taken at the batch that
    brings the jobs since the last to the spacing, at least 3 here and at least the last
    copy's rows, and every copy is kept."""
    monkeypatch.setattr(totals_snapshots, "SNAPSHOT_EVERY_JOBS", SPACING)
    with fresh_ledger(store) as example:
        run_history(example, [("jobs", 2)] * 20)
        assert check_every_moment(example) >= 3
        conn = Connection(parse_store_url(example.url))
        try:
            marks = conn.rows(
                "SELECT position, copied FROM period_totals_snapshot_marks ORDER BY position"
            )
            jobs = dict(conn.rows("SELECT position, COUNT(*) FROM jobs GROUP BY position"))
            for (earlier, copied), (later, _) in zip(marks, marks[1:], strict=False):
                between = sum(n for p, n in jobs.items() if earlier < p <= later)
                assert between >= max(SPACING, copied)
                # The copy came at the first batch that reached the spacing.
                assert between - jobs[later] < max(SPACING, copied)
        finally:
            conn.close()


def test_every_moment_nearer_to_a_copy_can_start_from_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window moves between two copies (a period every 1,000 s, a batch every 700 s), and
    a copy still holds every period counted by the moments nearer to it than to the copy
    before it (fewer job batches between): they start from it, so no moment groups more than
    half the batches between two copies. And it holds no period before those."""
    monkeypatch.setattr(totals_snapshots, "SNAPSHOT_EVERY_JOBS", SPACING)
    with fresh_ledger(store) as example:
        run_history(example, [("jobs", 2)] * 20)
        config = parse_store_url(example.url)
        ledger, conn = Ledger(config), Connection(config)
        try:
            log = conn.rows("SELECT position, at, site_version, kind FROM log_index")
            windows = {
                int(position): window(site_state_at(ledger, int(version)), float(at))
                for position, at, version, _kind in log
            }
            batches = sorted(int(position) for position, _at, _v, kind in log if kind == "jobs")
            held = {
                int(p): int(f)
                for p, f in conn.rows(
                    "SELECT position, first_period FROM period_totals_snapshot_marks"
                )
            }
            copies = sorted(held)
            moved = 0
            for earlier, later in zip(copies, copies[1:], strict=False):
                nearer = []
                for position, (first, _last) in windows.items():
                    if not earlier < position < later:
                        continue  # a moment at a copy reads that copy
                    below = sum(1 for b in batches if earlier < b <= position)
                    above = sum(1 for b in batches if position < b <= later)
                    found = totals_snapshots.nearest(conn, position, first)
                    assert found[0] == earlier, position
                    if above < below:
                        nearer.append(first)
                        assert found[1] == later, position
                        moved += first < windows[later][0]  # the case: the window moved
                own_first = windows[later][0]
                assert held[later] == min([own_first, *nearer])
            assert moved
        finally:
            conn.close()
            ledger.close()
