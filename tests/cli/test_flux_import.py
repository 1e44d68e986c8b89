"""Bringing a flux-accounting site over (import-flux-accounting) and taking it back out
(export-db, pop-db), on both stores: every schema version of flux-accounting's test databases,
the legacy small_* sites' trees and fair-share, rule-breaking sources, the opening balance and
the jobs it already holds, and the export -> pop-db -> export round trip."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, PG_URL, T0, Store, create_ledger

FLUX_DBS = DATA / "test_dbs"
ALL_DBS = sorted(FLUX_DBS.glob("*.db"))
HALF_LIFE = 604800
ONE_NODE = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}]}}


def source_rows(path: Path, table: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        if not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone():
            return []
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY rowid")]
    finally:
        conn.close()


def read_models(store: Store, *tables: str) -> dict[str, list[dict[str, Any]]]:
    from ledger.store.connections import Connection, parse_store_url

    conn = Connection(parse_store_url(store.url))
    try:
        return {t: conn.query(f"SELECT * FROM {t}") for t in tables}
    finally:
        conn.close()


@pytest.fixture
def other_store(store: Store, tmp_path: Path) -> Iterator[Store]:
    """A second, empty ledger on the same kind of store."""
    if store.kind == "sqlite":
        yield Store("sqlite", f"sqlite:///{tmp_path / 'other.db'}")
        return
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield Store("postgres", f"{PG_URL.split('?')[0]}?schema={schema}")
    with psycopg.connect(PG_URL.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# --- every schema version -----------------------------------------------------------------------
@pytest.mark.parametrize("db", ALL_DBS, ids=lambda p: p.name)
def test_every_flux_accounting_test_database_imports(store: Store, db: Path) -> None:
    """Into a ledger the import creates: every bank, association, queue, project, factor and
    config key of the source, with their fields."""
    report = json.loads(store.run("import-flux-accounting", str(db), "--json").stdout)
    got = read_models(
        store,
        "bank_table",
        "association_table",
        "queue_table",
        "project_table",
        "priority_factor_weight_table",
        "config_table",
    )
    banks = source_rows(db, "bank_table")
    assocs = source_rows(db, "association_table")
    assert sorted(
        (b["bank_id"], b["bank"], b["parent_bank"], b["shares"]) for b in banks
    ) == sorted((b["bank_id"], b["bank"], b["parent_bank"], b["shares"]) for b in got["bank_table"])
    ours = {(a["username"], a["bank"]): a for a in got["association_table"]}
    assert set(ours) == {(a["username"], a["bank"]) for a in assocs}
    for a in assocs:
        mine = ours[(a["username"], a["bank"])]
        assert mine["shares"] == a["shares"]
        assert mine["userid"] == a.get("userid", 65534)
        assert mine["creation_time"] == a["creation_time"]
        assert mine["mod_time"] == a["mod_time"]
        assert mine["active"] == a.get("active", 1 - a.get("deleted", 0))
        assert mine["fairshare"] == a["fairshare"]  # the stored value, until update-fshare
        assert mine["job_usage"] == a["job_usage"]
        for limit in ("max_running_jobs", "max_active_jobs", "max_nodes", "max_cores"):
            if limit in a:
                assert mine[limit] == a[limit]
    assert len(got["queue_table"]) == len(source_rows(db, "queue_table"))
    projects = {p["project"] for p in source_rows(db, "project_table")} | {"*"}
    assert {p["project"] for p in got["project_table"]} == projects
    assert len(got["priority_factor_weight_table"]) == 4
    assert len(got["config_table"]) == 7
    objects = report["objects"]
    assert objects["banks"][:2] == [len(banks), len(banks)]
    assert objects["associations"][:2] == [len(assocs), len(assocs)]
    assert report["sha256"] and report["seconds"] >= 0


# --- the legacy small_* sites -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["small_no_tie", "small_tie", "small_tie_all"])
def test_legacy_sites_show_their_tree_and_fair_share(store: Store, name: str) -> None:
    """After the import, the tree shows the stored values; after update-fshare, the values
    recomputed from the opening balance: flux-accounting's print_hierarchy byte for byte."""
    store.run("import-flux-accounting", str(FLUX_DBS / f"{name}.db"))
    expected = DATA / "print_hierarchy"
    assert store.run("view-bank", "root", "-t").stdout == (expected / f"{name}.txt").read_text()
    store.run("update-fshare", now=T0 + 3600)
    for flags, suffix in ((["-t"], ""), (["-t", "-P"], "_parsable")):
        shown = store.run("view-bank", "root", *flags, now=T0 + 3600).stdout
        assert shown == (expected / f"{name}{suffix}.txt").read_text()


def test_stored_fair_share_is_shown_until_update_fshare_and_as_of(store: Store) -> None:
    """out_of_insert_order stores fair-share 0.0 for its users: shown after the import (also
    as of the import's time), replaced by the walk's values at update-fshare."""
    store.run("import-flux-accounting", str(FLUX_DBS / "out_of_insert_order.db"))
    users = json.loads(store.run("list-users", "--json").stdout)
    assert {u["username"]: u["fairshare"] for u in users} == {
        "userA": 0.0,
        "userF": 0.0,
        "userZ": 0.0,
    }
    store.run("update-usage", now=T0 + 60)  # keeps the stored fair-share
    assert {u["fairshare"] for u in json.loads(store.run("list-users", "--json").stdout)} == {0.0}
    store.run("update-fshare", now=T0 + 120)
    users = json.loads(store.run("list-users", "--json", now=T0 + 120).stdout)
    assert {u["fairshare"] for u in users} == {1.0}
    then = json.loads(
        store.run("list-users", "--json", "--as-of", str(T0 + 30), now=T0 + 120).stdout
    )
    assert {u["fairshare"] for u in then} == {0.0}

    # explain-job says the same: a job submitted before the update had the stored value.
    early = {"id": 901, "username": "userA", "t_submit": T0 + 30, "t_run": T0 + 31}
    late = {"id": 902, "username": "userA", "t_submit": T0 + 130, "t_run": T0 + 131}
    records = [dict(j, t_inactive=j["t_run"] + 5, nnodes=1, ncores=1) for j in (early, late)]
    store.run("ingest", "-", input="".join(json.dumps(r) + "\n" for r in records), now=T0 + 140)
    before = json.loads(store.run("explain-job", "901", "--json", now=T0 + 140).stdout)
    assert before["fairshare"] == 0.0
    assert before["snapshot"] is None and before["fairshare_imported"]["at"] <= T0 + 30
    text = store.run("explain-job", "901", now=T0 + 140).stdout
    assert "fair-share 0.0: the value flux-accounting had stored, brought over by the" in text
    after = json.loads(store.run("explain-job", "902", "--json", now=T0 + 140).stdout)
    assert (after["fairshare"], after["fairshare_imported"]) == (1.0, None)
    assert after["fairshare_from"]["at"] == T0 + 120


# --- idempotence and non-empty ledgers ----------------------------------------------------------
def test_importing_twice_adds_nothing(store: Store, tmp_path: Path) -> None:
    db = FLUX_DBS / "small_tie.db"
    store.run("import-flux-accounting", str(db))
    position = store.log_position()
    copy = tmp_path / "renamed-copy.db"
    shutil.copyfile(db, copy)
    for path in (db, copy):  # the same content under another name is the same import
        result = store.run("import-flux-accounting", str(path), now=T0 + 10)
        assert "already imported" in result.stdout
        assert store.log_position() == position

    # The same site in a file with other bytes: the ledger already holds its objects.
    changed = tmp_path / "changed.db"
    shutil.copyfile(db, changed)
    with sqlite3.connect(changed) as conn:
        conn.execute("UPDATE association_table SET job_usage = 5.0 WHERE username = 'leaf.1.1'")
    result = store.run("import-flux-accounting", str(changed), now=T0 + 20)
    assert "already holds the banks and associations" in result.stdout
    assert store.log_position() == position

    # Another site: refused, nothing written.
    result = store.run(
        "import-flux-accounting", str(FLUX_DBS / "out_of_insert_order.db"), now=T0 + 30, expect=1
    )
    assert "already holds a site (root bank root)" in result.stderr
    assert store.log_position() == position


# --- sources that break our rules ---------------------------------------------------------------
def broken_site(tmp_path: Path) -> Path:
    """flux-accounting allows what we don't: a bank name used twice, users beside sub-banks,
    a cycle of banks (edit-bank has no cycle check)."""
    path = tmp_path / "broken.db"
    shutil.copyfile(FLUX_DBS / "FluxAccountingv0-60-0.db", path)
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('B', 'root', 1);
            INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('A', 'B', 1);
            INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('C', 'B', 1);
            INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('X', 'Y', 1);
            INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('Y', 'X', 1);
            INSERT INTO association_table (creation_time, mod_time, username, userid, bank,
                default_bank, shares, job_usage, fairshare)
                VALUES (10, 10, 'bob', 1001, 'B', 'B', 3, 12.0, 0.3);
            INSERT INTO job_usage_per_association_table VALUES
                ('bob', 1001, 'B', 0, 8.0), ('bob', 1001, 'B', 1, 4.0);
            INSERT INTO job_usage_factor_table VALUES ('bob', 1001, 'B', 0.0);
        """)
    return path


def test_a_source_that_breaks_our_rules_is_refused_row_by_row(store: Store, tmp_path: Path) -> None:
    path = broken_site(tmp_path)
    create_ledger(store)
    position = store.log_position()
    result = store.run("import-flux-accounting", str(path), expect=1)
    lines = result.stderr.splitlines()
    assert (
        lines[0]
        == "fairledger: broken.db breaks the ledger's rules (4 problems); nothing imported:"
    )
    assert lines[1:5] == [
        '  bank_table row 4: duplicate bank name "A" (also bank_table row 2) '
        "[--fix rename-duplicates]",
        '  bank_table row 6: bank "X" is in a cycle of banks (X -> Y -> X) [--fix attach-to-root]',
        '  bank_table row 7: bank "Y" is in a cycle of banks (X -> Y -> X) [--fix attach-to-root]',
        '  association_table row 2: user "bob" is in bank "B", which also has sub-banks (C) '
        "[--fix move-users]",
    ]
    assert "--fix rename-duplicates: a bank name used by several rows" in result.stderr
    assert store.log_position() == position  # nothing written

    # One fix is not enough: the others are still refused.
    result = store.run("import-flux-accounting", str(path), "--fix", "rename-duplicates", expect=1)
    assert "duplicate bank name" not in result.stderr and "cycle of banks" in result.stderr
    assert store.log_position() == position


def test_a_source_that_breaks_our_rules_imports_with_stated_fixes(
    store: Store, tmp_path: Path
) -> None:
    path = broken_site(tmp_path)
    fixes = ["--fix", "rename-duplicates", "--fix", "attach-to-root", "--fix", "move-users"]
    report = json.loads(store.run("import-flux-accounting", str(path), *fixes, "--json").stdout)
    assert report["fixes"] == [
        'bank_table row 4: duplicate bank name "A" (also bank_table row 2): renamed "A_4" '
        "(--fix rename-duplicates)",
        'bank_table row 6: bank "X" is in a cycle of banks (X -> Y -> X): attached under "root" '
        "(--fix attach-to-root)",
        'association_table row 2: user "bob" is in bank "B", which also has sub-banks (A_4, C): '
        'moved into new bank "B_users" (--fix move-users)',
    ]
    banks = {b["bank"]: b for b in json.loads(store.run("list-banks", "--json").stdout)}
    assert banks["A_4"]["parent_bank"] == "B" and banks["A_4"]["bank_id"] == 4
    assert banks["X"]["parent_bank"] == "root" and banks["Y"]["parent_bank"] == "X"
    assert banks["B_users"]["parent_bank"] == "B" and banks["B_users"]["shares"] == 3
    (bob,) = json.loads(store.run("view-user", "bob", "--json").stdout)
    assert (bob["bank"], bob["job_usage"], bob["fairshare"]) == ("B_users", 12.0, 0.3)
    # The opening balance: bins [8, 4] decayed by D^k hold raw charges [8, 8] in the current
    # and previous period: usage 8 + 0.5 * 8 = 12, as the source had it.
    store.run("update-usage", now=T0 + 60)
    periods = json.loads(store.run("view-user", "bob", "-J", now=T0 + 60).stdout)
    assert [p["value"] for p in periods[:2]] == [8.0, 8.0]
    assert json.loads(store.run("view-user", "bob", now=T0 + 60).stdout)[0]["job_usage"] == 12.0
    # Each fix is recorded with the events it changed: reason and source.
    history = json.loads(store.run("history", "--bank", "A_4", "--json", now=T0 + 60).stdout)
    assert 'fix: duplicate bank name "A" renamed "A_4"' in history[0]["reason"]
    assert history[0]["source"]["fixes"] == ['duplicate bank name "A" renamed "A_4"']
    assert history[0]["source"]["row"] == "bank_table row 4"
    history = json.loads(store.run("history", "--user", "bob", "--json", now=T0 + 60).stdout)
    assert 'moved from bank "B"' in history[0]["reason"]
    assert history[0]["source"]["creation_time"] == 10


def test_orphans_and_negative_shares_refused_then_fixed(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "orphans.db"
    shutil.copyfile(FLUX_DBS / "FluxAccountingv0-60-0.db", path)
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            INSERT INTO bank_table (bank, parent_bank, shares) VALUES ('N', 'root', -5);
            INSERT INTO bank_table (bank, parent_bank, shares, active) VALUES ('Z', 'ghost', 1, 0);
            INSERT INTO association_table (creation_time, mod_time, username, userid, bank,
                default_bank, job_usage) VALUES (10, 10, 'eve', 1002, 'gone', 'gone', 33.0);
            INSERT INTO association_table (creation_time, mod_time, active, username, userid,
                bank, default_bank, queues, projects, default_project)
                VALUES (11, 12, 0, 'eve', 1002, 'N', 'gone', 'gold', 'p1,*', 'p1');
        """)
    result = store.run("import-flux-accounting", str(path), expect=1)
    assert result.stderr.splitlines()[1:7] == [
        "  bank_table row 3: negative shares -5 [--fix zero-negative-shares]",
        '  bank_table row 4: parent bank "ghost" not found [--fix attach-to-root]',
        '  association_table row 2: bank "gone" not found [--fix drop-orphans]',
        '  association_table row 3: queue "gold" not found [--fix drop-orphans]',
        '  association_table row 3: project "p1" not found [--fix drop-orphans]',
        '  association_table row 3: default project "p1" not found [--fix drop-orphans]',
    ]
    report = json.loads(
        store.run("import-flux-accounting", str(path), "--fix", "all", "--json").stdout
    )
    assert len(report["fixes"]) == 6
    assert report["notes"] == [
        'association_table row 3: default bank "gone" of eve is not one of their '
        'associations: their default is "N"'
    ]
    banks = {
        b["bank"]: b for b in json.loads(store.run("list-banks", "--inactive", "--json").stdout)
    }
    assert (banks["N"]["shares"], banks["Z"]["parent_bank"], banks["Z"]["active"]) == (0, "root", 0)
    (eve,) = json.loads(store.run("view-user", "eve", "--json").stdout)
    assert (eve["bank"], eve["active"], eve["queues"], eve["projects"], eve["default_project"]) == (
        "N",
        0,
        "",
        "*",
        "*",
    )


# --- jobs and the opening balance ---------------------------------------------------------------
def alice_source(
    path: Path, job_usage: float, fairshare: float, bins: list[float], last: float
) -> Path:
    """v0.60 with alice (userid 5001) in bank A: her job_usage and fair-share, her usage bins
    as of her last update-usage at `last`, and the half-life period running to T0+1000."""
    shutil.copyfile(FLUX_DBS / "FluxAccountingv0-60-0.db", path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO association_table (creation_time, mod_time, username, userid, bank, "
            "default_bank, shares, job_usage, fairshare) VALUES (5, 6, 'alice', 5001, 'A', 'A', "
            "10, ?, ?)",
            (job_usage, fairshare),
        )
        conn.executemany(
            "INSERT INTO job_usage_per_association_table VALUES ('alice', 5001, 'A', ?, ?)",
            list(enumerate(bins)),
        )
        conn.execute("INSERT INTO job_usage_factor_table VALUES ('alice', 5001, 'A', ?)", (last,))
        conn.execute("UPDATE t_half_life_period_table SET end_half_life_period = ?", (T0 + 1000,))
    return path


def with_jobs(tmp_path: Path) -> Path:
    """v0.60 with alice in bank A: usage bins as of her last update-usage, a job that update
    counted (ended before last_job_timestamp), one it has not seen yet, and a job of a user
    flux-accounting never charged (no job_usage_factor_table row)."""
    last = T0 - 1000
    path = alice_source(tmp_path / "with-jobs.db", 150.0, 0.25, [100.0, 50.0, 0.0, 0.0], last)
    with sqlite3.connect(path) as conn:
        for job_id, userid, end, elapsed in (
            (11, 5001, last - 10, 100),  # inside the balance
            (12, 5001, last + 10, 40),  # not yet charged by flux-accounting: counts
            (13, 7777, last + 20, 70),  # nobody's: never charged
        ):
            conn.execute(
                "INSERT INTO jobs (id, userid, t_submit, t_run, t_inactive, ranks, R, jobspec, "
                "project, bank) VALUES (?, ?, ?, ?, ?, '0', ?, ?, '*', 'A')",
                (
                    job_id,
                    userid,
                    end - elapsed,
                    end - elapsed,
                    end,
                    json.dumps(ONE_NODE),
                    json.dumps({"attributes": {"system": {"bank": "A"}}}),
                ),
            )
    return path


def test_the_opening_balance_and_the_jobs_it_holds(store: Store, tmp_path: Path) -> None:
    path = with_jobs(tmp_path)
    store.run("create-db", now=T0 - 3600)  # the jobs end in the ledger's current period
    report = json.loads(store.run("import-flux-accounting", str(path), "--json").stdout)
    assert report["jobs"] == {
        "source": 3,
        "recorded": 3,
        "duplicate": 0,
        "unmatched": 1,
        "matched": 2,
        "in_balance": 2,
        "invalid": 0,
    }
    assert report["balance"] == {"associations": 1, "entries": 2, "periods_elapsed": 0}
    jobs = json.loads(store.run("view-job-records", "--json", "--fields", "id,charge").stdout)
    assert sorted(int(j["id"]) for j in jobs) == [11, 12, 13]
    # usage = the balance (100 + 0.5 * 100 raw) + the job flux-accounting had not charged yet.
    store.run("update-usage", now=T0 + 60)
    (alice,) = json.loads(store.run("view-user", "alice", now=T0 + 60).stdout)
    assert alice["job_usage"] == 150.0 + 40.0
    periods = json.loads(store.run("view-user", "alice", "-J", now=T0 + 60).stdout)
    assert [p["value"] for p in periods[:2]] == [140.0, 100.0]
    # As of the import, from the jobs and the balance recorded by then: the same usage.
    (then,) = json.loads(
        store.run("view-user", "alice", "--json", "--as-of", str(T0), now=T0 + 60).stdout
    )
    assert then["job_usage"] == 190.0 and then["fairshare"] == 0.25
    # A half-life period later, it decays like any usage.
    store.run("update-usage", now=T0 + HALF_LIFE)
    (later,) = json.loads(store.run("view-user", "alice", "--json", now=T0 + HALF_LIFE).stdout)
    assert later["job_usage"] == 0.5 * 140.0 + 0.25 * 100.0
    # Importing again records nothing: the jobs are there already.
    result = store.run("import-flux-accounting", str(path), now=T0 + HALF_LIFE)
    assert "jobs: 0 recorded, 3 already there" in result.stdout
    # A longer half-life cuts the periods anew, the balance's with the jobs': its previous-week
    # entry (100, placed mid-week before the ledger's creation) is still one period back.
    store.run("edit-config", "priority_decay_half_life=2w", now=T0 + HALF_LIFE)
    store.run("update-usage", now=T0 + HALF_LIFE)
    (rebinned,) = json.loads(store.run("view-user", "alice", "--json", now=T0 + HALF_LIFE).stdout)
    assert rebinned["job_usage"] == 140.0 + 0.5 * 100.0
    assert rebinned["job_usage"] != later["job_usage"]
    # A rebuild gives the same usage read models as the incremental updates did.
    tables = ("usage_balance", "period_totals", "jobs", "association_table", "bank_table")
    before = {t: sorted(map(repr, rows)) for t, rows in read_models(store, *tables).items()}
    store.run("rebuild", now=T0 + HALF_LIFE)
    after = {t: sorted(map(repr, rows)) for t, rows in read_models(store, *tables).items()}
    assert after == before


def test_a_balance_and_jobs_without_userid_add_up_as_one_identity(
    store: Store, tmp_path: Path
) -> None:
    """Jobs recorded by username alone count under the same identity (no userid, username,
    bank) as an opening balance's entry, so a period's charge is one exact sum: 123.45678 +
    4.75 = 128.20678, where adding the two as floats gives 128.20677999999998. explain-job's
    one-association usage must be the one the site's tables hold."""
    bins = [123.45678, 0.0, 0.0, 0.0]
    path = alice_source(tmp_path / "balance.db", 123.45678, 0.5, bins, T0 - 1000)
    store.run("create-db", now=T0 - 3600)
    store.run("import-flux-accounting", str(path), now=T0)

    def job(job_id: int, start: float, seconds: float) -> str:
        return json.dumps(
            {
                "id": job_id,
                "username": "alice",
                "bank": "A",
                "t_submit": start,
                "t_run": start,
                "t_inactive": start + seconds,
                "nnodes": 1,
                "ncores": 1,
            }
        )

    store.run("ingest", "-", input=job(900, T0 + 10, 4.75) + "\n", now=T0 + 30)
    store.run("update-fshare", now=T0 + 60)
    (alice,) = json.loads(store.run("view-user", "alice", now=T0 + 90).stdout)
    assert alice["job_usage"] == 128.20678
    # A job submitted after that update is explained with the usage the update saw.
    store.run("ingest", "-", input=job(901, T0 + 70, 5) + "\n", now=T0 + 90)
    explained = json.loads(store.run("explain-job", "901", "--json", now=T0 + 90).stdout)
    assert explained["usage"]["job_usage"] == 128.20678


def test_a_stale_source_decays_as_it_would_have(store: Store, tmp_path: Path) -> None:
    """The source's last update-usage was two half-lives before the import: its bins have
    missed two decays, which the balance applies."""
    path = with_jobs(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE t_half_life_period_table SET end_half_life_period = ?",
            (T0 - 2 * HALF_LIFE - 10,),
        )
        conn.execute("DELETE FROM jobs")
    report = json.loads(store.run("import-flux-accounting", str(path), "--json").stdout)
    assert report["balance"]["periods_elapsed"] == 2
    store.run("update-usage", now=T0 + 60)
    (alice,) = json.loads(store.run("view-user", "alice", "--json", now=T0 + 60).stdout)
    assert alice["job_usage"] == 0.25 * 150.0


# --- the report ---------------------------------------------------------------------------------
def test_the_import_report(store: Store) -> None:
    out = store.run("import-flux-accounting", str(FLUX_DBS / "small_tie_all.db")).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"imported {FLUX_DBS / 'small_tie_all.db'} (user_version 0 ")
    assert lines[0].endswith("s")
    assert lines[1:8] == [
        "object            source  ledger  inactive",
        "banks                  4       4         0",
        "associations           9       9         0",
        "queues                 0       0         0",
        "projects               0       1         0",
        "factor weights         0       4         0",
        "config keys            0       7         0",
    ]
    assert "opening balance: 9 period entries for 9 associations" in out
    assert "jobs: 0 in the source, 0 recorded (0 matched, 0 unmatched" in out
    assert "  association_table.admin_level" in out


# --- export-db, pop-db and the round trip -------------------------------------------------------
def build_site(store: Store) -> None:
    """A site with everything the tables carry: a tree, limits, queues, projects, an inactive
    association and bank, edited factors and config, usage and fair-share."""
    create_ledger(store)
    store.run("add-queue", "batch", "--priority", "100", "--max-running-jobs", "7")
    store.run("add-project", "climate")
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", "30", "--parent-bank", "root", "--priority", "2.5")
    store.run("add-bank", "chemistry", "10", "--parent-bank", "root")
    store.run("add-bank", "old", "1", "--parent-bank", "root")
    for user, bank, extra in (
        ("alice", "physics", ["--queues", "batch", "--projects", "climate", "-N", "4"]),
        ("alice", "chemistry", ["--shares", "5"]),
        ("bob", "chemistry", ["--max-running-jobs", "2"]),
        ("carol", "old", []),
        ("dave", "physics", []),
    ):
        store.run("add-user", "--username", user, "--bank", bank, "--userid", "5001", *extra)
    store.run("edit-user", "alice", "--default-bank", "chemistry", now=T0 + 1)
    store.run("delete-user", "dave", "physics", now=T0 + 2)
    store.run("delete-bank", "old", now=T0 + 3)
    store.run("edit-factor", "--factor", "queue", "--weight", "500", now=T0 + 4)
    store.run("edit-config", "core_weight=2", now=T0 + 5)
    jobs = "".join(
        json.dumps(
            {
                "id": n,
                "username": user,
                "bank": bank,
                "t_run": T0,
                "t_inactive": T0 + 50 * n,
                "nnodes": 1,
                "ncores": 2,
            }
        )
        + "\n"
        for n, (user, bank) in enumerate(
            [("alice", "physics"), ("bob", "chemistry"), ("alice", "chemistry")], start=1
        )
    )
    store.run("ingest", "-", input=jobs, now=T0 + 200)
    store.run("update-fshare", now=T0 + 300)


def export(store: Store, directory: Path, now: float) -> dict[str, bytes]:
    result = store.run("export-db", "--dir", str(directory), now=now)
    assert result.stdout.splitlines()[0].startswith(f"wrote {directory / 'bank_table.csv'} (")
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.csv"))}


def pop_all(store: Store, files: dict[str, bytes], directory: Path, now: float) -> None:
    args = [a for name in files for a in ("-c", str(directory / name))]
    store.run("pop-db", *args, now=now)


def test_export_pop_db_export_round_trip(store: Store, other_store: Store, tmp_path: Path) -> None:
    build_site(store)
    first = export(store, tmp_path / "first", T0 + 400)
    assert sorted(first) == [
        "association_table.csv",
        "bank_table.csv",
        "config_table.csv",
        "priority_factor_weight_table.csv",
        "project_table.csv",
        "queue_table.csv",
    ]
    assert first["bank_table.csv"].decode().splitlines() == [
        "bank_id,bank,active,parent_bank,shares,job_usage,priority,ignore_older_than",
        "1,root,1,,1,1500.0,0.0,0",
        "2,physics,1,root,30,250.0,2.5,0",
        "3,chemistry,1,root,10,1250.0,0.0,0",
        "4,old,0,root,1,0.0,0.0,0",
    ]
    # Loaded a week later into an empty ledger, then exported again: the same bytes.
    later = T0 + HALF_LIFE
    other_store.run("create-db", now=later)
    pop_all(other_store, first, tmp_path / "first", later)
    second = export(other_store, tmp_path / "second", later)
    assert second == first
    assert (
        other_store.run("view-bank", "root", "-t", now=later).stdout
        == store.run("view-bank", "root", "-t", now=T0 + 400).stdout
    )


def test_import_export_pop_db_round_trip(store: Store, other_store: Store, tmp_path: Path) -> None:
    store.run("import-flux-accounting", str(with_jobs(tmp_path)))
    first = export(store, tmp_path / "first", T0)
    other_store.run("create-db", now=T0 + 100)
    pop_all(other_store, first, tmp_path / "first", T0 + 100)
    assert export(other_store, tmp_path / "second", T0 + 100) == first


def test_pop_db_refuses_bad_rows_and_writes_nothing(ledger_store: Store, tmp_path: Path) -> None:
    (tmp_path / "bank_table.csv").write_text("bank,parent_bank,shares\nroot,,1\nA,root,-3\n")
    (tmp_path / "association_table.csv").write_text(
        "username,userid,bank,shares\nalice,5001,A,1\nbob,5002,nowhere,1\n"
    )
    position = ledger_store.log_position()
    result = ledger_store.run(
        "pop-db",
        "-c",
        str(tmp_path / "association_table.csv"),
        "-c",
        str(tmp_path / "bank_table.csv"),
        expect=1,
    )
    assert result.stderr.splitlines() == [
        "fairledger: pop-db: ValueError: pop-db: 3 row(s) refused; nothing written:",
        "  bank_table.csv line 3: invalid shares: -3 (shares must be >= 0)",
        "  association_table.csv line 2: Bank A does not exist in bank_table",
        "  association_table.csv line 3: Bank nowhere does not exist in bank_table",
    ]
    assert ledger_store.log_position() == position
    (tmp_path / "bank_table.csv").write_text("bank,parent_bank,shares\nA,root,3\nroot,,1\n")
    result = ledger_store.run(
        "pop-db",
        "-c",
        str(tmp_path / "bank_table.csv"),
        "-c",
        str(tmp_path / "association_table.csv"),
        "--fields",
        "username,bank,parent_bank,shares",  # userid left out: its default
        expect=1,
    )
    assert "association_table.csv line 3: Bank nowhere" in result.stderr
    (tmp_path / "association_table.csv").write_text("username,userid,bank\nalice,5001,A\n")
    ledger_store.run(
        "pop-db",
        "-c",
        str(tmp_path / "bank_table.csv"),
        "-c",
        str(tmp_path / "association_table.csv"),
    )
    (alice,) = json.loads(ledger_store.run("view-user", "alice", "--json").stdout)
    assert (alice["bank"], alice["userid"], alice["shares"], alice["fairshare"]) == (
        "A",
        5001,
        1,
        0.5,
    )


def test_import_event_topics_are_pinned() -> None:
    """Stored events are found by topic: moving or renaming these classes needs an upcaster."""
    from eventsourcing.utils import get_topic

    from ledger.import_events import SiteImported, UsageBalanceImported

    assert get_topic(UsageBalanceImported) == "ledger.import_events:UsageBalanceImported"
    assert get_topic(SiteImported) == "ledger.import_events:SiteImported"
