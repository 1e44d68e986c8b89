"""--as-of on the read commands, on both stores: the ledger as it stood then."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import job_line
from tests.conftest import T0, Store


def job(job_id: int, user: str, end: float, seconds: float, bank: str = "A") -> str:
    return job_line(job_id, user=user, bank=bank, end=end, seconds=seconds)


def history(store: Store) -> None:
    """A small history: T0 site; T0+100 jobs; T0+200 fair-share; T0+300 shares edited;
    T0+400 carol added and more jobs; T0+500 fair-share again."""
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    store.run("add-bank", "B", "1", "--parent-bank", "root")
    store.run("add-queue", "gold", "--priority", "100")
    store.run("add-user", "-u", "alice", "-B", "A", "-i", "1001")
    store.run("add-user", "-u", "bob", "-B", "B", "-i", "1002")
    store.run(
        "ingest",
        "-",
        input=job(1, "alice", T0 + 90, 80) + "\n" + job(2, "bob", T0 + 95, 10, "B") + "\n",
        now=T0 + 100,
    )
    store.run("update-fshare", now=T0 + 200)
    store.run("edit-bank", "A", "--shares", "10", "--reason", "grant", now=T0 + 300)
    store.run("edit-queue", "gold", "--priority", "5", now=T0 + 300)
    store.run("add-user", "-u", "carol", "-B", "A", now=T0 + 400)
    store.run("ingest", "-", input=job(3, "bob", T0 + 390, 200, "B") + "\n", now=T0 + 400)
    store.run("update-fshare", now=T0 + 500)


def users(store: Store, at: float | str, now: float = T0 + 600) -> dict[str, tuple]:
    out = store.run("list-users", "--json", "--as-of", str(at), now=now)
    assert out.stderr.startswith("as of ")
    return {
        r["username"]: (r["job_usage"], r["fairshare"], r["shares"]) for r in json.loads(out.stdout)
    }


def test_state_usage_and_fairshare_as_of(ledger_store: Store) -> None:
    history(ledger_store)
    assert users(ledger_store, T0 + 50) == {"alice": (0.0, 0.5, 1), "bob": (0.0, 0.5, 1)}
    # After the jobs, before the first update-fshare: usage at T, fair-share still 0.5.
    assert users(ledger_store, T0 + 150) == {"alice": (80.0, 0.5, 1), "bob": (10.0, 0.5, 1)}
    assert users(ledger_store, T0 + 250) == {"alice": (80.0, 0.5, 1), "bob": (10.0, 1.0, 1)}
    assert users(ledger_store, T0 + 450) == {
        "alice": (80.0, 0.5, 1),
        "bob": (210.0, 1.0, 1),
        "carol": (0.0, 0.5, 1),
    }
    now = users(ledger_store, T0 + 600)
    assert now["bob"][1] == 1 / 3 or round(now["bob"][1], 6) == 0.333333
    (bank,) = json.loads(
        ledger_store.run("view-bank", "A", "--json", "--as-of", str(T0 + 250), now=T0 + 600).stdout
    )
    assert bank["shares"] == 1
    (queue,) = json.loads(
        ledger_store.run(
            "view-queue", "gold", "--json", "--as-of", str(T0 + 250), now=T0 + 600
        ).stdout
    )
    assert queue["priority"] == 100
    assert users(ledger_store, "6m", now=T0 + 600) == users(ledger_store, T0 + 240)
    iso = "2023-11-14T22:17:30+00:00"  # T0 + 250
    assert users(ledger_store, iso) == users(ledger_store, T0 + 250)


def test_other_read_commands_take_as_of(ledger_store: Store) -> None:
    history(ledger_store)
    at = ["--as-of", str(T0 + 250)]
    later = {"now": T0 + 600}
    tree = ledger_store.run("view-bank", "root", "-t", *at, **later).stdout
    assert "carol" not in tree and "bob                true                   1" in tree
    records = json.loads(ledger_store.run("view-job-records", "--json", *at, **later).stdout)
    assert [r["jobid"] for r in records] == ["ƒ2", "ƒ3"]
    assert (
        json.loads(
            ledger_store.run(
                "priority", "--username", "bob", "--queue", "gold", "--json", *at, **later
            ).stdout
        )["priority"]
        == 1100000
    )
    ledger_store.run("check-job", "--username", "carol", *at, expect=1, **later)
    payloads = json.loads(ledger_store.run("export-payloads", *at, **later).stdout)
    assert {r["userid"]: r["fairshare"] for r in payloads["rec_update"]["data"]} == {
        1001: 0.5,
        1002: 1.0,
    }
    config = json.loads(ledger_store.run("export-json", *at, **later).stdout)
    assert config["queues"][0]["priority"] == 100
    for command in ("list-banks", "list-queues", "list-projects", "list-factors", "list-configs"):
        ledger_store.run(command, *at, **later)
    ledger_store.run("view-user", "bob", "-J", *at, **later)


def test_as_of_before_the_ledger_is_an_error(ledger_store: Store) -> None:
    result = ledger_store.run("list-users", "--as-of", str(T0 - 10), expect=1)
    assert result.stderr == (
        "fairledger: list-users: ValueError: no ledger at 2023-11-14T22:13:10+00:00: the ledger "
        "was created at 2023-11-14T22:13:20+00:00\n"
    )
    ledger_store.run("list-users", "--as-of", "yesterday-ish", expect=2)


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    later=st.lists(
        st.sampled_from(["shares", "user", "job", "fshare", "delete"]), min_size=1, max_size=4
    )
)
def test_answer_for_t_never_changes_when_events_come_later(
    ledger_store: Store, later: list[str]
) -> None:
    # An empty ledger lists no banks: flux-accounting's "no results found in query", exit 1.
    if ledger_store.run("list-banks", "--json", now=None, expect=None).exit_code:
        history(ledger_store)
    now = json.loads(ledger_store.run("list-banks", "--json", now=None).stdout)
    assert now
    asked = str(T0 + 450)
    before = {
        c: ledger_store.run(*c.split(), "--as-of", asked, now=None).stdout
        for c in ("list-users --json", "view-bank root -t", "view-job-records --json")
    }
    for n, action in enumerate(later):
        when = None
        if action == "shares":
            ledger_store.run("edit-bank", "B", "--shares", str(n + 2), now=when)
        elif action == "user":
            ledger_store.run(
                "add-user", "-u", f"u{n}{len(before)}", "-B", "B", now=when, expect=None
            )
        elif action == "job":
            ledger_store.run(
                "ingest", "-", input=job(100 + n, "alice", T0 + 420, 5) + "\n", now=when
            )
        elif action == "fshare":
            ledger_store.run("update-fshare", now=when)
        else:
            ledger_store.run("delete-user", "alice", "A", now=when, expect=None)
    after = {c: ledger_store.run(*c.split(), "--as-of", asked, now=None).stdout for c in before}
    assert after == before


def test_inactive_association_keeps_its_last_value_as_of(ledger_store: Store) -> None:
    """Design §4: inactive associations keep their last fair-share; as-of agrees with the
    live read model about it."""
    history(ledger_store)
    ledger_store.run("delete-user", "bob", "B", now=T0 + 550)
    ledger_store.run("update-fshare", now=T0 + 560)
    live = {
        r["username"]: r["fairshare"]
        for r in json.loads(ledger_store.run("list-users", "--json", now=T0 + 600).stdout)
    }
    then = users(ledger_store, T0 + 590)
    assert then["bob"][1] == live["bob"] == users(ledger_store, T0 + 540)["bob"][1]
    assert {name: value[1] for name, value in then.items()} == live
