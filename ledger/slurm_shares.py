"""Slurm's association tree as its fair-share algorithms see it: shares, fs parents, usage sums.

Shared by `ledger.fair_tree` (Fair Tree, Slurm's default) and `ledger.classic_fairshare`
(`PriorityFlags=NO_FAIR_TREE`). This module reproduces what Slurm 25.05's `assoc_mgr.c` sets up
before either algorithm runs; the algorithms themselves live in those two modules.

The tree, as Slurm builds it:

* `root` is the cluster association. Accounts hang below root or below another account; user
  associations (one per (user, account)) are leaves below an account or directly below root. An
  account may hold users and sub-accounts together.
* Raw shares are a uint32; `Fairshare=parent` is stored as SLURMDB_FS_USE_PARENT (0x7FFFFFFF),
  which is `PARENT` here.
* Every association has two parents (`_set_assoc_parent_and_user`): the direct parent (usage is
  summed along it) and the *fair-share parent*, which is

  - for a `parent` association: its first ancestor that is not `parent`;
  - else, if its direct parent is `parent`: the first ancestor of that parent that is not `parent`;
  - else its direct parent.

  Each association is appended to its fs parent's children list, so the children of a `parent`
  account are flattened into the list of their grandparent (or higher), and the `parent` account
  itself sits in that list too, with an empty children list.
* `level_shares` of an association is the sum over its fs parent's children list of their raw
  shares, a `parent` child contributing the shares of its own (empty) children list, i.e. 0
  (`_get_children_level_shares`). The sum is a uint32 in Slurm and wraps modulo 2^32; so does ours.
  Root is in no list, so its level_shares is 0.
* An association's raw usage is its own (for users) or the sum of every user below it in the real
  tree (for accounts and root, whatever `parent` says). Slurm keeps it in a `long double`; here it
  is a `numpy.longdouble` (80-bit extended precision on x86-64 Linux), summed in the order below.
* Children lists are in *lineage* order: Slurm sorts its association list by the `lineage` string
  (`/acct/subacct/` for accounts, `/acct/0-user/` for users) with `strcmp`, and then appends each
  association to its fs parent's list in that order (`slurmdb_sort_hierarchical_assoc_list`,
  then `_set_assoc_parent_and_user`). This order decides which of two tied sibling accounts Fair
  Tree visits first, and it is also the order in which `sshare` prints its rows. It is byte order of
  the path, which is account-name byte order for direct siblings, except that `/` sorts after
  `-` and `.` (`a-b/` < `a/`), and that a flattened child is ordered by the name of the `parent`
  account it came through.

Everything here is pure: the functions take plain values and return new objects.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import numpy as np

from ledger.errors import InvalidValue

# Re-exported: the facts live in a module without numpy, so that a read that prints them
# (list-users, view-bank) does not pay for numpy at start-up.
from ledger.slurm_parent import PARENT as PARENT
from ledger.slurm_parent import PARENT_TEXT as PARENT_TEXT

NO_VAL: int = 0xFFFFFFFE
INFINITE: int = 0xFFFFFFFF
NO_VAL64: int = 0xFFFFFFFFFFFFFFFE
INFINITE64: int = 0xFFFFFFFFFFFFFFFF

ROOT: str = "root"
"""The name of the cluster association; top-level accounts and users name it as their parent."""

_UINT32 = 2**32

LongDouble = np.longdouble
"""C `long double`: 80-bit x87 extended precision on x86-64 Linux (64-bit significand)."""


@dataclass(frozen=True)
class SlurmAccount:
    """An account association: its name, its parent account (`ROOT` for a top-level account)
    and its raw shares (an int >= 0, or `PARENT`)."""

    name: str
    parent: str
    shares: int

    def __post_init__(self) -> None:
        _check_name(self.name, "account")
        _check_name(self.parent, f"parent of account {self.name!r}")
        _check_shares(self.shares, f"account {self.name!r}")
        if self.name == ROOT:
            raise InvalidValue(f"{ROOT!r} is the cluster association; it is not an account here")


@dataclass(frozen=True)
class SlurmUser:
    """A user association (user, account): its raw shares and its raw usage, already decayed
    (Slurm's `usage_raw`, in TRES-billing-seconds). `account` may be `ROOT`."""

    name: str
    account: str
    shares: int
    usage: float

    def __post_init__(self) -> None:
        _check_name(self.name, "user")
        _check_name(self.account, f"account of user {self.name!r}")
        _check_shares(self.shares, f"user ({self.name}, {self.account})")
        if isinstance(self.usage, bool) or not isinstance(self.usage, int | float):
            raise InvalidValue(
                f"usage of user ({self.name}, {self.account}) must be a number, got {self.usage!r}"
            )
        if not math.isfinite(self.usage) or self.usage < 0:
            raise InvalidValue(
                f"usage of user ({self.name}, {self.account}) must be finite and >= 0,"
                f" got {self.usage!r}"
            )


@dataclass(eq=False)
class Association:
    """One node of the tree as Slurm's `assoc_mgr` holds it (internal, built by `build_tree`).

    `user` is None for accounts and root. `account` is the account's own name for an account, the
    holding account for a user, and `ROOT` for root. `shares` is None for root.
    """

    account: str
    user: str | None
    shares: int | None
    lineage: bytes
    parent: Association | None = None
    fs_parent: Association | None = None
    fs_children: list[Association] = field(default_factory=list)
    children: list[Association] = field(default_factory=list)
    level_shares: int = 0
    usage_raw: np.longdouble = field(default_factory=lambda: LongDouble(0))

    @property
    def is_user(self) -> bool:
        return self.user is not None

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def uses_parent(self) -> bool:
        return self.shares == PARENT

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.account, self.user)


@dataclass(frozen=True)
class SlurmTree:
    """The tree built by `build_tree`: root, and every association in lineage (sshare) order."""

    root: Association
    associations: tuple[Association, ...]

    @property
    def user_count(self) -> int:
        """Fair Tree's `g_user_assoc_count`: every user association, idle or not."""
        return sum(1 for assoc in self.associations if assoc.is_user)


def build_tree(accounts: Iterable[SlurmAccount], users: Iterable[SlurmUser]) -> SlurmTree:
    """Link accounts and users into Slurm's association tree (see the module docstring).

    Raises InvalidValue if an account name is repeated, a parent or account is unknown, the
    accounts form a cycle, or a (user, account) pair is repeated. The result does not depend on
    the order of the inputs.
    """
    accounts = list(accounts)
    users = list(users)
    root = Association(account=ROOT, user=None, shares=None, lineage=b"/")
    by_name: dict[str, SlurmAccount] = {}
    for account in accounts:
        if account.name in by_name:
            raise InvalidValue(f"account {account.name!r} appears twice")
        by_name[account.name] = account
    nodes: dict[str, Association] = {ROOT: root}

    def account_node(name: str, path: tuple[str, ...] = ()) -> Association:
        if name in nodes:
            return nodes[name]
        if name in path:
            raise InvalidValue(f"accounts form a cycle: {' -> '.join((*path, name))}")
        spec = by_name.get(name)
        if spec is None:
            raise InvalidValue(f"unknown account {name!r} (parent of {path[-1]!r})")
        parent = account_node(spec.parent, (*path, name))
        node = Association(
            account=name,
            user=None,
            shares=spec.shares,
            lineage=parent.lineage + name.encode() + b"/",
            parent=parent,
        )
        nodes[name] = node
        return node

    for account in accounts:
        account_node(account.name)
    seen_users: set[tuple[str, str]] = set()
    leaves: list[tuple[Association, float]] = []
    for user in users:
        if (user.name, user.account) in seen_users:
            raise InvalidValue(f"user ({user.name}, {user.account}) appears twice")
        seen_users.add((user.name, user.account))
        holder = nodes.get(user.account)
        if holder is None:
            raise InvalidValue(f"unknown account {user.account!r} of user {user.name!r}")
        leaf = Association(
            account=user.account,
            user=user.name,
            shares=user.shares,
            lineage=holder.lineage + b"0-" + user.name.encode() + b"/",
            parent=holder,
        )
        leaves.append((leaf, float(user.usage)))

    ordered = sorted([*nodes.values(), *(leaf for leaf, _ in leaves)], key=_lineage)
    for assoc in ordered:
        if assoc.parent is not None:
            assoc.parent.children.append(assoc)
            assoc.fs_parent = _fs_parent(assoc)
            assoc.fs_parent.fs_children.append(assoc)
    for assoc in ordered:
        # `_set_children_level_shares(assoc, _get_children_level_shares(assoc))`
        level = _children_level_shares(assoc)
        for child in assoc.fs_children:
            child.level_shares = level
    # `_apply_new_usage`: a user's usage is charged to it and to every direct ancestor.
    usage = {id(leaf): value for leaf, value in leaves}
    for assoc in ordered:
        if assoc.is_user:
            amount = LongDouble(usage[id(assoc)])
            node: Association | None = assoc
            while node is not None:
                node.usage_raw = node.usage_raw + amount
                node = node.parent
    return SlurmTree(root=root, associations=tuple(ordered))


def iter_fs_tree(assoc: Association) -> Iterator[Association]:
    """The association and everything below it in the fair-share tree, parents first."""
    yield assoc
    for child in assoc.fs_children:
        yield from iter_fs_tree(child)


def uint32_sum(values: Sequence[int]) -> int:
    """A sum of uint32 values as C adds them: modulo 2^32."""
    return sum(values) % _UINT32


def _children_level_shares(assoc: Association) -> int:
    """`_get_children_level_shares`: a `parent` child adds its own children's shares (none)."""
    return uint32_sum(
        [
            _children_level_shares(child) if child.uses_parent else (child.shares or 0)
            for child in assoc.fs_children
        ]
    )


def _fs_parent(assoc: Association) -> Association:
    """`_set_assoc_parent_and_user` with `_find_assoc_parent(…, direct=false)`."""
    parent = assoc.parent
    assert parent is not None
    if assoc.uses_parent:
        return _first_non_parent_above(assoc)
    if parent.uses_parent:
        return _first_non_parent_above(parent)
    return parent


def _first_non_parent_above(assoc: Association) -> Association:
    node = assoc.parent
    assert node is not None
    while node.uses_parent and node.parent is not None:
        node = node.parent
    return node


def _lineage(assoc: Association) -> bytes:
    return assoc.lineage


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidValue(f"{what} must be a non-empty string, got {name!r}")
    if "/" in name:
        raise InvalidValue(f"{what} must not contain '/', got {name!r}")


def _check_shares(shares: int, what: str) -> None:
    if isinstance(shares, bool) or not isinstance(shares, int) or not 0 <= shares <= PARENT:
        raise InvalidValue(
            f"shares of {what} must be an integer in [0, {PARENT}] ({PARENT} = parent),"
            f" got {shares!r}"
        )


class SshareRow:
    """What every algorithm's row prints alike; the subclass (a dataclass) holds `user` and
    `raw_usage` and says its own columns in `sshare_fields`."""

    user: str | None
    raw_usage: float

    @property
    def is_user(self) -> bool:
        return self.user is not None

    @property
    def printed_raw_usage(self) -> int:
        """sshare's RawUsage: `(uint64_t)usage_raw`."""
        return int(self.raw_usage)

    def sshare_fields(self) -> list[str]:
        raise NotImplementedError

    def sshare_line(self) -> str:
        """`sshare -a -l -p` of `sshare_fields`, each field followed by `|`."""
        return "".join(f"{value}|" for value in self.sshare_fields())


class _AssociationRow(Protocol):
    @property
    def account(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def fair_share(self) -> float | None: ...


RowT = TypeVar("RowT", bound=_AssociationRow)


class AssociationRows(Generic[RowT]):
    """What every algorithm's result answers: its rows by (account, user); `rows` is the
    subclass's dataclass field, in sshare (lineage) order, root first."""

    rows: tuple[RowT, ...]

    def user(self, account: str, user: str) -> RowT:
        """The row of user association (user, account)."""
        return self._by_key[(account, user)]

    def account(self, account: str) -> RowT:
        """The row of an account (or of root, as `"root"`)."""
        return self._by_key[(account, None)]

    def fair_shares(self) -> dict[tuple[str, str], float]:
        """Fair-share factor per (account, user)."""
        return {
            (row.account, row.user): row.fair_share
            for row in self.rows
            if row.user is not None and row.fair_share is not None
        }

    @functools.cached_property
    def _by_key(self) -> dict[tuple[str, str | None], RowT]:
        return {(row.account, row.user): row for row in self.rows}
