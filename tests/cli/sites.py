"""Sites built through the CLI, as an administrator would."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import DATA, Store, create_ledger
from tests.templates import built


def build_flux_account_site(store: Store, with_e_users: bool = False) -> None:
    """The hierarchy of flux-accounting's t/expected/flux_account tests."""
    store.run("add-bank", "root", "1")
    for bank in "ABCD":
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    store.run("add-bank", "E", "1", "--parent-bank", "D")
    store.run("add-bank", "F", "1", "--parent-bank", "D")
    for user, bank in [("user5011", "A"), ("user5012", "A"), ("user5013", "B"), ("user5014", "C")]:
        store.run("add-user", "--username", user, "--userid", user[4:], "--bank", bank)
    if with_e_users:
        for user in ("user5030", "user5031"):
            store.run("add-user", "--username", user, "--userid", user[4:], "--bank", "E")


def flux_account_ledger(store: Store, with_e_users: bool = False) -> None:
    """A new ledger (create-db) holding build_flux_account_site's hierarchy."""
    built(store, _flux_account_ledger, with_e_users)


def _flux_account_ledger(store: Store, with_e_users: bool) -> None:
    create_ledger(store)
    build_flux_account_site(store, with_e_users)


def read_weighted_tree(name: str) -> list[tuple[int, str, str, int, int]]:
    path = DATA / "weighted_tree" / f"{name}.csv"
    with Path(path).open() as handle:
        return [(int(d), b, u, int(s), int(g)) for d, b, u, s, g in csv.reader(handle)]


def build_weighted_tree_site(store: Store, name: str, uid_base: int = 5011) -> list[str]:
    """Banks and users of a weighted_tree CSV (usage not applied). Returns usernames in order."""
    parents: list[str] = []
    users = []
    for depth, bank, user, shares, _usage in read_weighted_tree(name):
        if user == "%^+_nouser":
            parents = parents[:depth]
            parent = parents[-1] if parents else ""
            args = ["add-bank", bank, str(shares)]
            if parent:
                args += ["--parent-bank", parent]
            store.run(*args)
            parents.append(bank)
        else:
            # flux-accounting's sample payloads give leaf.X.Y the uid 50XY.
            parts = user.split(".")
            uid = str(
                5000 + 10 * int(parts[1]) + int(parts[2])
                if len(parts) == 3
                else uid_base + len(users)
            )
            store.run(
                "add-user",
                "--username",
                user,
                "--bank",
                bank,
                "--userid",
                uid,
                "--shares",
                str(shares),
            )
            users.append(user)
    return users


def weighted_tree_ledger(store: Store, name: str, uid_base: int = 5011) -> list[str]:
    """A new ledger (create-db) holding build_weighted_tree_site's banks and users."""
    return built(store, _weighted_tree_ledger, name, uid_base)


def _weighted_tree_ledger(store: Store, name: str, uid_base: int) -> list[str]:
    create_ledger(store)
    return build_weighted_tree_site(store, name, uid_base)
