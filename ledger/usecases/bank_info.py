"""bank-info: the bank tree's normalised shares and usage, for a bank's subtree, a bank's path
to the root, or a user's associations (by default the user running the command)."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

from ledger.bank_info import (
    BankRow,
    ShareNode,
    UserRow,
    down_from,
    find,
    share_tree,
    up_to_root,
)
from ledger.clock import AsOf
from ledger.usecases.associations import check_names
from ledger.usecases.session import Session
from projections.queries import site as queries


@dataclass(frozen=True)
class BankInfoRequest:
    """At most one of tree, tree_no_users, to_root and user; none means the caller's user."""

    tree: str | None = None
    tree_no_users: str | None = None
    to_root: str | None = None
    user: str | None = None
    exclude: str | None = None


@dataclass(frozen=True)
class BankInfo:
    nodes: list[ShareNode]  # in the order shown
    default_bank: str | None  # the user's default bank (marked), when a user was asked about


def caller_username() -> str:
    """The user running the command. flux-accounting asks its service process, which runs as
    the `flux` user, so its default always showed that user's banks; we ask our own process."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def bank_info(s: Session, asked: BankInfoRequest, as_of: AsOf | None = None) -> BankInfo:
    check_names(
        bank=asked.tree or asked.tree_no_users or asked.to_root or asked.exclude,
        username=asked.user,
    )
    conn = s.read(as_of)
    banks = [
        BankRow(r["bank"], r["parent_bank"], int(r["shares"]), float(r["job_usage"]))
        for r in queries.banks(conn, include_inactive=True)
    ]
    rows = queries.associations(conn)
    users = [
        UserRow(r["username"], r["bank"], int(r["shares"]), float(r["job_usage"]), r["fairshare"])
        for r in rows
    ]
    root = share_tree(banks, users)
    bank = asked.tree or asked.tree_no_users
    if bank is not None:
        top = find(root, bank, is_user=False)[0]  # bank names are unique in the ledger
        return BankInfo(down_from(top, asked.tree is not None, asked.exclude), None)
    if asked.to_root is not None:
        targets = find(root, asked.to_root, is_user=False)
        return BankInfo(up_to_root(targets, asked.exclude), None)
    username = asked.user if asked.user is not None else caller_username()
    targets = find(root, username, is_user=True)
    # Every association of a user names the same default bank.
    default = next((r["default_bank"] for r in rows if r["username"] == username), None)
    return BankInfo(up_to_root(targets, asked.exclude), default)
