"""flux-accounting's changing commands and options that were missing (issue 12), on both stores:
bank --ignore-older-than, --fairshare, edit-all-users, sync-userids, add-config/delete-config,
scrub-old-jobs and --default-project's stored order."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.cli.test_usage import charged, ingest, period, update, usage, usage_store
from tests.conftest import DATA, T0, Store, create_ledger, refusal

__all__ = ["usage_store"]  # the fixture, imported for pytest

GOLDEN = DATA / "site_changes"


def one(text: str) -> dict:
    """A view command's JSON row (an object, or flux-accounting's list of one)."""
    value = json.loads(text)
    if isinstance(value, list):
        (value,) = value
    assert isinstance(value, dict)
    return value


def bank_row(store: Store, bank: str, now: float = T0) -> dict:
    return one(store.run("view-bank", bank, "--json", now=now).stdout)


def fairshares(store: Store, now: float) -> dict[tuple[str, str], float]:
    rows = json.loads(store.run("list-users", "--json", now=now).stdout)
    return {(r["username"], r["bank"]): r["fairshare"] for r in rows}


def refused(store: Store, *args: str, now: float = T0) -> str:
    """The command exits 1 with one line on stderr and records nothing."""
    before = store.log_position()
    result = store.run(*args, now=now, expect=1)
    assert store.log_position() == before
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
    return result.stderr


# --- bank --ignore-older-than -------------------------------------------------------------------
def test_a_bank_cutoff_drops_its_older_jobs_until_set_back(
    usage_store: Store, tmp_path: Path
) -> None:
    now = period(2, 60)
    ingest(
        usage_store,
        tmp_path,
        now,
        charged(1, 100, period(0)),
        charged(2, 10, period(2)),
        charged(3, 40, period(0), userid=5003),
    )
    update(usage_store, now)
    # D = 0.5: two periods back counts a quarter.
    assert usage(usage_store, now)[("alice", "A")] == 10 + 100 / 4
    usage_store.run("edit-bank", "A", "--ignore-older-than", str(period(1)), now=now)
    update(usage_store, now)
    assert usage(usage_store, now) == {
        ("alice", "A"): 10.0,
        ("bob", "A"): 0.0,
        ("carol", "B"): 40 / 4,  # bank B has no cutoff
    }
    assert bank_row(usage_store, "A", now)["ignore_older_than"] == int(period(1))
    # flux-accounting's way back: the cutoff set to 0 counts every job again.
    usage_store.run("edit-bank", "A", "--ignore-older-than", "0", now=now + 1)
    update(usage_store, now + 1)
    assert usage(usage_store, now + 1)[("alice", "A")] == 10 + 100 / 4
    assert bank_row(usage_store, "A", now + 1)["ignore_older_than"] == 0


def test_a_parent_bank_cutoff_covers_the_banks_below(usage_store: Store, tmp_path: Path) -> None:
    now = period(1, 60)
    ingest(usage_store, tmp_path, now, charged(1, 100, period(0)), charged(2, 8, period(1)))
    usage_store.run("edit-bank", "root", "--ignore-older-than", str(period(0, 90)), now=now)
    update(usage_store, now)
    assert usage(usage_store, now)[("alice", "A")] == 8.0


def test_add_bank_with_a_cutoff_is_shown_exported_and_in_history(
    ledger_store: Store, tmp_path: Path
) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run(
        "add-bank", "A", "1", "--parent-bank", "root", "--ignore-older-than", "1600000000"
    )
    assert bank_row(ledger_store, "A")["ignore_older_than"] == 1600000000
    ledger_store.run("export-db", "--dir", str(tmp_path))
    with (tmp_path / "bank_table.csv").open() as f:
        rows = {r["bank"]: r for r in csv.DictReader(f)}
    assert rows["A"]["ignore_older_than"] == "1600000000"
    assert rows["root"]["ignore_older_than"] == "0"
    # pop-db of that export keeps the cutoff on the bank (a round trip loses nothing).
    other = Store("sqlite", f"sqlite:///{tmp_path / 'other.db'}")
    create_ledger(other)
    other.run("pop-db", "-c", str(tmp_path / "bank_table.csv"))
    assert bank_row(other, "A")["ignore_older_than"] == 1600000000
    assert bank_row(other, "root")["ignore_older_than"] in (0, None)
    lines = ledger_store.run("history", "--bank", "A").stdout.splitlines()
    assert lines[-1].endswith("edit-bank A: ignore_older_than (none) → 2020-09-13T12:26:40+00:00")


def test_clear_usage_leaves_its_cutoff_on_the_bank(usage_store: Store, tmp_path: Path) -> None:
    now = period(1, 60)
    ingest(usage_store, tmp_path, now, charged(1, 100, period(0), userid=5004))
    usage_store.run("clear-usage", "A", "--ignore-older-than", str(period(1)), now=now)
    assert bank_row(usage_store, "A", now)["ignore_older_than"] == int(period(1))
    # An association added after the clear does not count the bank's older jobs either.
    usage_store.run("add-user", "-u", "erin", "-i", "5004", "-B", "A", now=now)
    update(usage_store, now)
    assert usage(usage_store, now)[("erin", "A")] == 0.0


def test_a_bad_cutoff_is_refused(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    result = ledger_store.run("edit-bank", "root", "--ignore-older-than", "soon", expect=2)
    assert "soon" in result.stderr
    assert "nope" in refused(ledger_store, "edit-bank", "nope", "--ignore-older-than", "0")


# --- --fairshare ----------------------------------------------------------------------------------
def test_a_fairshare_set_by_hand_is_in_force_until_a_walk_ranks_it(
    usage_store: Store, tmp_path: Path
) -> None:
    at = period(0, 10)
    usage_store.run("add-user", "-u", "dave", "-i", "5004", "-B", "B", "--fairshare", "0.8", now=at)
    usage_store.run("edit-user", "alice", "--fairshare", "0.25", now=at)
    shown = fairshares(usage_store, at)
    assert shown[("dave", "B")] == 0.8
    assert shown[("alice", "A")] == 0.25
    assert shown[("bob", "A")] == 0.5
    usage_store.run("update-fshare", now=at + 10)
    walked = fairshares(usage_store, at + 10)
    assert walked[("dave", "B")] != 0.8 and walked[("alice", "A")] != 0.25
    # A past moment still answers with the value then in force, before and after a rebuild.
    for _ in range(2):
        then = json.loads(
            usage_store.run("list-users", "--json", "--as-of", str(at + 5), now=at + 20).stdout
        )
        assert {(r["username"], r["bank"]): r["fairshare"] for r in then} == shown
        usage_store.run("rebuild", now=at + 20)
    lines = usage_store.run("history", "--user", "alice", now=at + 20).stdout.splitlines()
    assert lines[-1].endswith("edit-user alice/A: fairshare 0.5 → 0.25")


def test_explain_job_says_a_fairshare_was_set_by_hand(usage_store: Store, tmp_path: Path) -> None:
    at = period(0, 10)
    usage_store.run("edit-user", "alice", "--fairshare", "0.25", "--actor", "ops", now=at)
    job = charged(7, 10, end=at + 30, t_submit=at + 5)
    ingest(usage_store, tmp_path, at + 40, job)
    text = usage_store.run("explain-job", "7", now=at + 50).stdout
    assert "fair-share 0.25: set by hand (--fairshare) by " in text
    assert "brought over by the import" not in text
    data = json.loads(usage_store.run("explain-job", "7", "--json", now=at + 50).stdout)
    assert data["fairshare"] == 0.25 and data["fairshare_set_by"] in ("ops", "postgres")


def test_an_inactive_association_keeps_a_value_set_after_its_last_walk(
    usage_store: Store,
) -> None:
    at = period(0, 10)
    usage_store.run("update-fshare", now=at)
    usage_store.run("delete-user", "bob", "A", now=at + 1)
    usage_store.run("edit-user", "bob", "--fairshare", "0.125", now=at + 2)
    usage_store.run("update-fshare", now=at + 3)  # leaves the inactive association out
    assert fairshares(usage_store, at + 3)[("bob", "A")] == 0.125
    then = json.loads(
        usage_store.run("list-users", "--json", "--as-of", str(at + 3), now=at + 4).stdout
    )
    assert {r["username"]: r["fairshare"] for r in then}["bob"] == 0.125


def test_fairshare_minus_one_resets_and_bad_values_are_refused(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    ledger_store.run("add-user", "-u", "alice", "-B", "A", "--fairshare", "0.9")
    for bad in ("1.5", "-0.5", "nan", "high"):
        assert bad in refused(ledger_store, "edit-user", "alice", "--fairshare", bad)
    assert bad in refused(ledger_store, "add-user", "-u", "bob", "-B", "A", "--fairshare", bad)
    ledger_store.run("edit-user", "alice", "--fairshare", "-1")
    assert fairshares(ledger_store, T0) == {("alice", "A"): 0.5}


# --- edit-all-users and sync-userids ------------------------------------------------------------
def two_users(store: Store) -> None:
    store.run("add-bank", "root", "1")
    for bank in ("A", "B"):
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    for user, uid in (("alice", "5001"), ("bob", "5002")):
        store.run("add-user", "-u", user, "-i", uid, "-B", "A")
        store.run("add-user", "-u", user, "-B", "B")


def rows(store: Store, now: float = T0) -> dict[tuple[str, str], dict]:
    out = json.loads(store.run("list-users", "--json", now=now).stdout)
    return {(r["username"], r["bank"]): r for r in out}


def test_edit_all_users_edits_every_association(ledger_store: Store) -> None:
    two_users(ledger_store)
    ledger_store.run(
        "edit-all-users", "--shares", "7", "--max-running-jobs", "-1", "--fairshare", "0.75"
    )
    for row in rows(ledger_store).values():
        assert (row["shares"], row["max_running_jobs"], row["fairshare"]) == (7, 5, 0.75)
    ledger_store.run("edit-all-users", "--default-bank", "B")
    assert {r["default_bank"] for r in rows(ledger_store).values()} == {"B"}


def test_edit_all_users_refuses_what_would_break_the_ledger(ledger_store: Store) -> None:
    two_users(ledger_store)
    ledger_store.run("add-bank", "C", "1", "--parent-bank", "root")
    ledger_store.run("add-user", "-u", "carol", "-B", "C")
    assert "--bank A" in refused(ledger_store, "edit-all-users", "--bank", "A", "--shares", "2")
    assert "user carol" in refused(ledger_store, "edit-all-users", "--default-bank", "A")
    assert "no fields" in refused(ledger_store, "edit-all-users")
    # One bad value leaves every association as it was.
    assert "nope" in refused(ledger_store, "edit-all-users", "--shares", "3", "--queues", "nope")
    assert {r["shares"] for r in rows(ledger_store).values()} == {1}


def test_sync_userids_gives_a_user_one_userid(ledger_store: Store) -> None:
    two_users(ledger_store)
    ledger_store.run("edit-user", "alice", "-B", "B", "--userid", "6001", now=T0 + 5)
    assert rows(ledger_store, T0 + 5)[("alice", "A")]["userid"] == 5001
    result = ledger_store.run("sync-userids", now=T0 + 6)
    assert result.stderr == "sync-userids: alice/A userid 5001 -> 6001\n"
    assert {k: r["userid"] for k, r in rows(ledger_store, T0 + 6).items()} == {
        ("alice", "A"): 6001,
        ("alice", "B"): 6001,
        ("bob", "A"): 5002,
        ("bob", "B"): 5002,
    }
    before = ledger_store.log_position()
    assert ledger_store.run("sync-userids", now=T0 + 7).stderr == ""
    assert ledger_store.log_position() == before


# --- add-config and delete-config ---------------------------------------------------------------
def test_add_and_delete_config(ledger_store: Store) -> None:
    ledger_store.run("add-config", "site_name=lab cluster", now=T0 + 1)
    ledger_store.run("edit-config", "site_name=big lab", now=T0 + 2)
    row = one(ledger_store.run("view-config", "site_name", "--json").stdout)
    assert row == {"key": "site_name", "value": "big lab"}
    later = T0 + 3
    # flux-accounting's words and exception types, as its t1093 greps them.
    assert refused(ledger_store, "add-config", "site_name=x", now=later) == refusal(
        "add-config",
        "UNIQUE constraint failed: config_table.key (key site_name already exists)",
        "IntegrityError",
    )
    assert refused(ledger_store, "delete-config", "decay_factor", now=later) == refusal(
        "delete-config",
        "key-value pair is not allowed to be removed from config_table "
        "(decay_factor is a core config key)",
    )
    assert refused(
        ledger_store, "edit-config", "priority_usage_reset_period=foo", now=later
    ) == refusal(
        "edit-config",
        "invalid Flux standard duration: 'foo' (use e.g. 30s, 5m, 2h, 7d, 1w or seconds)",
    )
    assert "nope" in refused(ledger_store, "delete-config", "nope", now=later)
    for bad in ("novalue", "a=b=c"):
        assert bad in refused(ledger_store, "add-config", bad, now=later)
    ledger_store.run("delete-config", "site_name", now=later)
    listed = ledger_store.run("list-configs", "--json", now=later).stdout
    keys = [r["key"] for r in json.loads(listed)]
    assert "site_name" not in keys and len(keys) >= 7
    history = ledger_store.run("history", "--config", now=later).stdout.splitlines()[-3:]
    assert [line.split("  ", 2)[2] for line in history] == (
        GOLDEN / "config_history.txt"
    ).read_text().splitlines()


# --- --default-project order, scrub-old-jobs ----------------------------------------------------
def test_default_project_is_appended_as_flux_accounting_stores_it(ledger_store: Store) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    for project in ("climate", "ocean"):
        ledger_store.run("add-project", project)
    ledger_store.run("add-user", "-u", "alice", "-B", "A", "-P", "climate", "--default-project",
                     "ocean")  # fmt: skip
    ledger_store.run("add-user", "-u", "bob", "-B", "A", "--default-project", "ocean")
    got = {k[0]: (r["projects"], r["default_project"]) for k, r in rows(ledger_store).items()}
    assert got == {"alice": ("climate,*,ocean", "ocean"), "bob": ("*,ocean", "ocean")}


def test_scrub_old_jobs_removes_nothing_and_says_why(usage_store: Store, tmp_path: Path) -> None:
    ingest(usage_store, tmp_path, period(0, 60), charged(1, 100, period(0)))
    before = usage_store.log_position()
    result = usage_store.run("scrub-old-jobs", "0", now=period(0, 70))
    assert result.stdout == ""
    assert result.stderr == (GOLDEN / "scrub_old_jobs.txt").read_text()
    assert usage_store.log_position() == before
    records = json.loads(usage_store.run("view-job-records", "--json", now=period(0, 70)).stdout)
    assert len(records) == 1
    usage_store.run("scrub-old-jobs", "-1", expect=2)


# --- clear-usage and the fair-share --------------------------------------------------------------
def test_clear_usage_puts_the_fairshare_back_at_a_new_associations_until_the_next_walk(
    usage_store: Store, tmp_path: Path
) -> None:
    """flux-accounting's clear-usage sets the cleared associations' fairshare to 0.5 (research
    §3.6); it stays in force until update-fshare ranks them again (t1080 checks it)."""
    at = period(0, 10)
    ingest(usage_store, tmp_path, at, charged(1, 50, end=at - 5), charged(2, 10, end=at - 5))
    usage_store.run("update-fshare", now=at + 1)
    walked = fairshares(usage_store, at + 1)
    assert walked[("alice", "A")] != 0.5 and walked[("carol", "B")] != 0.5
    usage_store.run("clear-usage", "A", "--actor", "ops", now=at + 2)
    cleared = fairshares(usage_store, at + 2)
    # A's associations are back at 0.5; carol in B keeps the walk's value.
    assert cleared == {**walked, ("alice", "A"): 0.5, ("bob", "A"): 0.5}
    job = charged(3, 10, end=at + 4, t_submit=at + 3)
    ingest(usage_store, tmp_path, at + 5, job)
    data = json.loads(usage_store.run("explain-job", "3", "--json", now=at + 6).stdout)
    assert data["fairshare"] == 0.5
    assert data["fairshare_cleared_by"] in ("ops", "postgres")
    text = usage_store.run("explain-job", "3", now=at + 6).stdout
    assert "put back at a new association's value by the clear-usage of " in text
    # The past still answers with what was in force then, before and after a rebuild.
    for _ in range(2):
        for moment, expected in ((at + 1, walked), (at + 2, cleared)):
            then = usage_store.run("list-users", "--json", "--as-of", str(moment), now=at + 6)
            rows = json.loads(then.stdout)
            assert {(r["username"], r["bank"]): r["fairshare"] for r in rows} == expected
        usage_store.run("rebuild", now=at + 6)
    usage_store.run("update-fshare", now=at + 7)
    assert fairshares(usage_store, at + 7)[("alice", "A")] != 0.5
