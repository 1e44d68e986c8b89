"""Fair-share checkpoints hold exactly what each update-fshare's walk gave, on both stores
(and one association's usage read alone equals the site's).

The oracle is independent of the checkpoint table: each snapshot is computed again from the
jobs recorded up to its marker (projections.queries.as_of.recompute), and the value an
association the walk left out keeps is found by walking back through those recomputed
snapshots, as docs/semantics.md states the rule (the last value a walk gave the same association;
else 0.5)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.store.application import Ledger
from ledger.store.connections import Connection, parse_store_url
from projections.queries.as_of import Moment, Recomputed, recompute
from projections.queries.fairshare_history import markers_between
from projections.writers import checkpoints
from projections.writers.usage_tables import association_usage_at
from tests.builders import job_line
from tests.conftest import T0, Store, create_ledger

USERS = {"alice": "A", "bob": "B", "carol": "B"}


def site(store: Store) -> None:
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    store.run("add-bank", "B", "3", "--parent-bank", "root")
    for uid, (user, bank) in enumerate(USERS.items()):
        store.run("add-user", "-u", user, "-B", bank, "-i", str(2000 + uid))


def job(job_id: int, user: str, end: float, seconds: float, by_uid: bool = False) -> str:
    """A job naming its user and bank, or (`by_uid`) only the user's userid."""
    if by_uid:
        userid = 2000 + sorted(USERS).index(user)
        return job_line(job_id, userid=userid, end=end, seconds=seconds) + "\n"
    return job_line(job_id, user=user, bank=USERS[user], end=end, seconds=seconds) + "\n"


def expected_entries(
    snapshots: list[tuple[Moment, Recomputed]], index: int
) -> dict[tuple[str, str], checkpoints.Entry]:
    marker, now = snapshots[index]
    out = {}
    for assoc in now.state.all_associations():
        key = (assoc.username, assoc.bank)
        value, source = NEW_ASSOCIATION_FAIRSHARE, None
        for earlier_marker, earlier in reversed(snapshots[: index + 1]):
            then = earlier.state.association(*key)
            if then is None or then.creation_time != assoc.creation_time:
                break
            if key in earlier.shares:
                value, source = earlier.shares[key], earlier_marker.position
                break
        mine = now.shares.get(key)
        out[key] = checkpoints.Entry(
            creation_time=assoc.creation_time,
            active=assoc.active,
            fairshare=value,
            source=source,
            job_usage=now.usage[key].usage,
            rank=None
            if mine is None
            else len(now.shares) - sum(1 for v in now.shares.values() if v > mine),
            ranked_of=len(now.shares),
        )
    return out


def check_every_checkpoint(store: Store) -> int:
    config = parse_store_url(store.url)
    ledger, conn = Ledger(config), Connection(config)
    try:
        markers = markers_between(conn, None, None)
        snapshots = [(m, recompute(ledger, conn, m)) for m in markers]
        read = {}
        for index, (marker, again) in enumerate(snapshots):
            read[marker.position] = checkpoints.read(conn, marker.position)
            assert read[marker.position] == expected_entries(snapshots, index)
            # explain-job's one-association usage is the site's, read from the user's jobs.
            for key, usage in again.usage.items():
                alone = association_usage_at(
                    conn, again.state, key, marker.event_time, max_position=marker.position
                )
                assert alone == usage
        # One association's history (key lookups over the stored changes) agrees with the
        # whole checkpoints read one by one, from every snapshot on: a range may start after
        # the full checkpoint its first snapshot's changes build on.
        keys = {key for entries in read.values() for key in entries}
        for key in keys:
            for first in markers:
                assert checkpoints.history(conn, key, first.position, markers[-1].position) == {
                    position: entries[key]
                    for position, entries in read.items()
                    if key in entries and position >= first.position
                }
        return len(markers)
    finally:
        conn.close()
        ledger.close()


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(
            ["job", "job", "uid-job", "fshare", "deactivate", "remove", "add", "shares", "clear"]
        ),
        st.sampled_from(sorted(USERS)),
    ),
    min_size=1,
    max_size=10,
)


@pytest.mark.slow
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS)
# Kept out of the walk: carried while the same association (bob), back to 0.5 once re-created
# (alice: removed, added again, then inactive at the next walk).
@example(
    actions=[
        ("job", "alice"),
        ("job", "bob"),
        ("fshare", "bob"),
        ("deactivate", "bob"),
        ("remove", "alice"),
        ("add", "alice"),
        ("deactivate", "alice"),
        ("fshare", "bob"),
        ("job", "carol"),
    ]
)
# Removed, then a full checkpoint (the changes outnumber the site): gone from it and after.
@example(
    actions=[
        ("fshare", "bob"),
        ("job", "alice"),
        ("job", "bob"),
        ("fshare", "bob"),
        ("remove", "carol"),
        ("job", "carol"),
        ("job", "alice"),
        ("fshare", "bob"),
        ("job", "bob"),
    ]
)
# Jobs known by userid only, and a cleared bank.
@example(
    actions=[
        ("uid-job", "alice"),
        ("job", "bob"),
        ("uid-job", "carol"),
        ("fshare", "bob"),
        ("job", "carol"),
        ("clear", "bob"),
        ("uid-job", "bob"),
        ("fshare", "bob"),
    ]
)
def test_checkpoints_hold_each_walk_and_the_values_carried(
    store: Store, actions: list[tuple[str, str]]
) -> None:
    with fresh_ledger(store) as example:
        run_history(example, actions)
        written = check_every_checkpoint(example)
        assert written >= 1
        # A rebuild writes every checkpoint in one fold (each from the one before, in memory).
        example.run("rebuild", now=None)
        assert check_every_checkpoint(example) == written


def run_history(example: Store, actions: list[tuple[str, str]]) -> None:
    site(example)
    when = T0 + 100
    for n, (action, user) in enumerate(actions):
        when += 1000
        if action == "job":
            example.run("ingest", "-", input=job(n + 1, user, when - 10, 50 + 7 * n), now=when)
        elif action == "uid-job":
            text = job(n + 1, user, when - 10, 30 + 5 * n, by_uid=True)
            example.run("ingest", "-", input=text, now=when)
        elif action == "clear":  # the jobs that ended before the last one stop counting
            example.run(
                "clear-usage", USERS[user], "--ignore-older-than", str(when - 500), now=when
            )
        elif action == "fshare":
            example.run("update-fshare", now=when)
        elif action == "deactivate":
            example.run("delete-user", user, USERS[user], now=when, expect=None)
        elif action == "remove":
            example.run("delete-user", user, USERS[user], "--force", now=when, expect=None)
        elif action == "add":
            example.run("add-user", "-u", user, "-B", USERS[user], now=when, expect=None)
        else:
            example.run(
                "edit-user", user, "-B", USERS[user], "--shares", str(n + 2), now=when, expect=None
            )
    example.run("update-fshare", now=when + 1000)


@contextlib.contextmanager
def fresh_ledger(store: Store) -> Iterator[Store]:
    """A new ledger beside the fixture's: hypothesis runs many examples in one fixture."""
    name = uuid.uuid4().hex[:10]
    if store.kind == "sqlite":
        example = Store("sqlite", store.url.replace("ledger.db", f"ledger-{name}.db"))
        create_ledger(example)
        yield example
        return
    base, _, _ = store.url.partition("?")
    example = Store("postgres", f"{base}?schema=c_{name}")
    try:
        create_ledger(example)
        yield example
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "c_{name}" CASCADE')


def test_an_unchanged_site_stores_no_rows(ledger_store: Store) -> None:
    """Updates that change nothing (no new jobs, same period) write no checkpoint rows, yet
    every checkpoint reads whole, naming its own walk as the source of ranked values."""
    site(ledger_store)
    ledger_store.run("ingest", "-", input=job(1, "alice", T0 + 50, 40), now=T0 + 100)
    for n in range(4):
        ledger_store.run("update-fshare", now=T0 + 200 + n)
    config = parse_store_url(ledger_store.url)
    ledger, conn = Ledger(config), Connection(config)
    try:
        markers = markers_between(conn, None, None)
        stored = {
            m.position: conn.query(
                "SELECT COUNT(*) AS n FROM fairshare_checkpoints WHERE position = ?",
                (m.position,),
            )[0]["n"]
            for m in markers
        }
        assert list(stored.values()) == [len(USERS), 0, 0, 0]
        first, last = (checkpoints.read(conn, m.position) for m in (markers[0], markers[-1]))
        newest = markers[-1].position
        assert {k: e.source for k, e in last.items()} == dict.fromkeys(USERS.items(), newest)
        assert {k: e._replace(source=None) for k, e in first.items()} == {
            k: e._replace(source=None) for k, e in last.items()
        }
    finally:
        conn.close()
        ledger.close()
    assert check_every_checkpoint(ledger_store) == 4
