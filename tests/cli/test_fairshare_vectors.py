"""flux-accounting's fair-share vectors reproduced through the CLI: banks and users added with
add-bank/add-user, each user's usage as one ingested job whose charge equals it, then
update-fshare. Byte-for-byte against its expected printouts, on both stores."""

from __future__ import annotations

import json

import pytest

from tests.cli.sites import read_weighted_tree, weighted_tree_ledger
from tests.conftest import DATA, T0, Store, refusal
from tests.templates import built

JOB_END = T0 + 5000  # inside the ledger's first period (half-life 1w from T0)
UPDATE_AT = T0 + 6000


def usage_jobs(name: str, overrides: dict[str, int] | None = None) -> str:
    lines = []
    for n, (_depth, bank, user, _shares, usage) in enumerate(read_weighted_tree(name)):
        usage = (overrides or {}).get(user, usage)
        if user == "%^+_nouser" or usage == 0:
            continue
        lines.append(
            json.dumps(
                {
                    "id": 1000 + n,
                    "username": user,
                    "bank": bank,
                    "t_run": JOB_END - usage,
                    "t_inactive": JOB_END,
                    "nnodes": 1,
                    "ncores": 1,
                }
            )
        )
    return "\n".join(lines) + "\n"


def build(store: Store, name: str) -> None:
    built(store, _build, name)


def _build(store: Store, name: str) -> None:
    weighted_tree_ledger(store, name)
    store.run("ingest", "-", input=usage_jobs(name), now=JOB_END)
    store.run("update-fshare", now=UPDATE_AT)


@pytest.mark.parametrize("name", ["small_no_tie", "small_tie", "small_tie_all"])
def test_print_hierarchy_byte_for_byte(store: Store, name: str) -> None:
    build(store, name)
    expected = DATA / "print_hierarchy"
    assert (
        store.run("view-bank", "root", "-t", now=UPDATE_AT).stdout
        == (expected / f"{name}.txt").read_text()
    )
    assert (
        store.run("view-bank", "root", "-t", "-P", now=UPDATE_AT).stdout
        == (expected / f"{name}_parsable.txt").read_text()
    )


# flux-accounting's published weighted-tree vectors, for the hierarchies our bank rules allow
# (small_tie_diff_type puts a user beside banks, which we refuse).
TABLE_6_1 = {
    "small_no_tie": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.857143,
        "leaf.2.1": 0.714286,
        "leaf.2.2": 0.571429,
        "leaf.1.3": 0.428571,
        "leaf.1.1": 0.285714,
        "leaf.1.2": 0.142857,
    },
    "small_tie": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.875,
        "leaf.1.3": 0.75,
        "leaf.2.3": 0.75,
        "leaf.1.2": 0.5,
        "leaf.2.2": 0.5,
        "leaf.1.1": 0.5,
        "leaf.2.1": 0.5,
    },
    "small_tie_all": {
        "leaf.1.3": 1.0,
        "leaf.2.3": 1.0,
        "leaf.3.3": 1.0,
        "leaf.1.1": 0.666667,
        "leaf.1.2": 0.666667,
        "leaf.2.1": 0.666667,
        "leaf.2.2": 0.666667,
        "leaf.3.1": 0.666667,
        "leaf.3.2": 0.666667,
    },
    "small_zero_shares": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.875,
        "leaf.2.3": 0.75,
        "leaf.1.3": 0.625,
        "leaf.1.2": 0.5,
        "leaf.1.1": 0.5,
        "leaf.2.1": 0.25,
        "leaf.2.2": 0.25,
    },
}


@pytest.mark.parametrize("name", sorted(TABLE_6_1))
def test_table_6_1(store: Store, name: str) -> None:
    build(store, name)
    rows = json.loads(store.run("list-users", "--json", now=UPDATE_AT).stdout)
    assert {r["username"]: r["fairshare"] for r in rows} == TABLE_6_1[name]


def test_minimal_tree_has_no_users(store: Store) -> None:
    build(store, "minimal")
    # flux-accounting's answer to an empty list: its error, on stderr, exit 1.
    empty = store.run("list-users", "--json", now=UPDATE_AT, expect=1)
    assert (empty.stdout, empty.stderr) == ("", refusal("list-users", "no results found in query"))


def test_update_fshare_pre_and_post(store: Store) -> None:
    build(store, "small_no_tie")
    expected = DATA / "update_fshare"
    assert (
        store.run("view-bank", "root", "-t", now=UPDATE_AT).stdout
        == (expected / "pre_fshare_update.expected").read_text()
    )
    extra = json.dumps(
        {
            "id": 99,
            "username": "leaf.2.1",
            "bank": "account2",
            "t_run": JOB_END - 47,
            "t_inactive": JOB_END,
            "nnodes": 1,
            "ncores": 1,
        }
    )
    store.run("ingest", "-", input=extra + "\n", now=UPDATE_AT)
    store.run("update-fshare", now=UPDATE_AT + 10)
    assert (
        store.run("view-bank", "root", "-t", now=UPDATE_AT + 10).stdout
        == (expected / "post_fshare_update.expected").read_text()
    )
