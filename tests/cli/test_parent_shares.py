"""Shares of 2147483647 are Slurm's Fairshare=parent on a Fair Tree or classic site, shown
`parent` (JSON: the string "parent") by list-users, list-banks, view-bank (-u, -t, JSON) and
view-user, in history lines recorded under such an algorithm and in diff's lines; on a
weighted-walk site they stay flux-accounting's "unlimited", as its output contract prints
2147483647. Limits at 2147483647 are "unlimited" on every site. On both stores."""

from __future__ import annotations

import json

import pytest

from tests.conftest import T0, Store, create_ledger

PARENT = "2147483647"


def site(store: Store, algorithm: str) -> None:
    """root > physics (50) > theory (parent); alice (parent) and bob (3) in theory."""
    store.run("create-db", "--fairshare-algorithm", algorithm)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", "50", "--parent-bank", "root")
    store.run("add-bank", "theory", PARENT, "--parent-bank", "physics")
    store.run("add-user", "-u", "alice", "-i", "5001", "-B", "theory", "--shares", PARENT)
    store.run("add-user", "-u", "bob", "-i", "5002", "-B", "theory", "--shares", "3")


def user_shares(store: Store, *args: str) -> dict[str, object]:
    rows = json.loads(store.run("list-users", "--json", *args).stdout)
    return {r["username"]: r["shares"] for r in rows}


@pytest.mark.parametrize("algorithm", ["fair-tree", "classic"])
def test_a_slurm_site_shows_parent(store: Store, algorithm: str) -> None:
    site(store, algorithm)
    assert user_shares(store) == {"alice": "parent", "bob": 3}
    banks = json.loads(store.run("list-banks", "--json").stdout)
    assert {b["bank"]: b["shares"] for b in banks} == {
        "root": 1,
        "physics": 50,
        "theory": "parent",
    }
    table = store.run("list-banks", "--fields", "bank,shares").stdout.splitlines()
    assert table == [
        "bank    | shares",
        "--------+-------",
        "root    | 1     ",
        "physics | 50    ",
        "theory  | parent",
    ]
    assert json.loads(store.run("view-bank", "theory").stdout)[0]["shares"] == "parent"
    assert json.loads(store.run("view-user", "alice").stdout)[0]["shares"] == "parent"
    members = json.loads(store.run("view-bank", "theory", "-u", "--json").stdout)
    assert [m["shares"] for m in members] == ["parent", 3]
    tree = store.run("view-bank", "physics", "-t", "-P").stdout.rstrip("\n").splitlines()
    assert tree[2:] == [
        " theory||true|parent|0.0",
        "  theory|alice|true|parent|0.0|0.5",
        "  theory|bob|true|3|0.0|0.5",
    ]
    tree_json = json.loads(store.run("view-bank", "physics", "-t", "--json").stdout)
    assert [r["shares"] for r in tree_json] == [50, "parent", "parent", 3]
    # -o formats the raw values, as on every site
    raw = store.run("list-users", "-o", "{username}:{shares}").stdout.splitlines()
    assert raw[1:] == ["alice:2147483647", "bob:3"]
    # a limit at 2147483647 is still flux-accounting's unlimited
    store.run("edit-user", "bob", "--max-nodes", PARENT)
    assert json.loads(store.run("view-user", "bob").stdout)[0]["max_nodes"] == "unlimited"
    history = store.run("history", "--bank", "theory").stdout
    assert "add-bank theory: parent_bank physics, shares parent, priority 0.0" in history


def test_a_weighted_walk_site_keeps_flux_accountings_unlimited(store: Store) -> None:
    create_ledger(store)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", PARENT, "--parent-bank", "root")
    store.run("add-user", "-u", "alice", "-i", "5001", "-B", "physics", "--shares", PARENT)
    assert user_shares(store) == {"alice": "unlimited"}
    row = json.loads(store.run("view-bank", "physics").stdout)[0]
    assert row["shares"] == "unlimited"
    assert "| unlimited |" in store.run("list-users").stdout
    tree = store.run("view-bank", "root", "-t", "-P").stdout.rstrip("\n").splitlines()
    assert tree[2:] == [" physics||true|2147483647|0.0", "  physics|alice|true|2147483647|0.0|0.5"]
    history = store.run("history", "--user", "alice").stdout
    assert "add-user alice/physics: userid 5001, shares unlimited" in history


def test_a_switch_changes_what_is_shown_from_then_on(store: Store) -> None:
    """The same value before and after edit-config fairshare_algorithm=fair-tree: as of a
    moment before, and in the history lines recorded before, it is "unlimited"."""
    create_ledger(store)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", PARENT, "--parent-bank", "root")
    store.run("edit-config", "fairshare_algorithm=fair-tree", now=T0 + 10)
    store.run("edit-bank", "physics", "--shares", "7", now=T0 + 20)
    store.run("edit-bank", "physics", "--shares", PARENT, now=T0 + 30)
    banks = json.loads(store.run("list-banks", "--json", now=T0 + 30).stdout)
    assert banks[1]["shares"] == "parent"
    before = store.run("list-banks", "--json", "--as-of", str(T0 + 5), now=T0 + 30).stdout
    assert json.loads(before)[1]["shares"] == "unlimited"
    lines = store.run("history", "--bank", "physics", now=T0 + 30).stdout.splitlines()
    assert [line.split("  ")[2] for line in lines] == [
        "add-bank physics: parent_bank root, shares unlimited, priority 0.0",
        "edit-bank physics: shares parent → 7",
        "edit-bank physics: shares 7 → parent",
    ]
    # a window of the history still knows the algorithm in force before it
    window = store.run("history", "--all", "--since", str(T0 + 25), now=T0 + 30).stdout
    assert "edit-bank physics: shares 7 → parent" in window
    # diff reads shares as the later moment's algorithm does
    diff = store.run("diff", "--from", str(T0 + 20), "--to", str(T0 + 30), now=T0 + 30).stdout
    assert "bank physics: shares 7 → parent" in diff
