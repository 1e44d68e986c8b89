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

`tree_columns` builds this tree as columns (what Fair Tree runs on), `build_tree` as linked
`Association` objects (what classic fair-share runs on) from the same columns.

Everything here is pure: the functions take plain values and return new objects.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import numpy as np

from ledger.errors import InvalidValue

# Re-exported: the facts live in a module without numpy, so that a read that prints them
# (list-users, view-bank) does not pay for numpy at start-up.
from ledger.slurm_parent import PARENT as PARENT
from ledger.slurm_parent import PARENT_TEXT as PARENT_TEXT

if TYPE_CHECKING:  # numpy.typing costs a millisecond at start-up, and annotations are strings
    from numpy.typing import NDArray

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


@dataclass(frozen=True)
class TreeColumns:
    """The tree built by `tree_columns`, one entry per association in lineage (sshare) order,
    root at index 0, each fact a column (a list, or a numpy array for what is computed in bulk).

    `parent` and `fs_parent` are entry indices, -1 for root; `shares` is None for root,
    `share_values` the same with 0 for root; `level_shares` is 0 for root; `usage` is the
    long double usage_raw.
    """

    account: list[str]
    user: list[str | None]
    shares: list[int | None]
    lineage: list[bytes]
    parent: NDArray[np.intp]
    fs_parent: NDArray[np.intp]
    is_user: NDArray[np.bool_]
    uses_parent: NDArray[np.bool_]
    share_values: NDArray[np.int64]
    level_shares: NDArray[np.int64]
    usage: NDArray[np.longdouble]

    def __len__(self) -> int:
        return len(self.account)

    @property
    def user_count(self) -> int:
        """Fair Tree's `g_user_assoc_count`: every user association, idle or not."""
        return int(np.count_nonzero(self.is_user))


def tree_columns(accounts: Iterable[SlurmAccount], users: Iterable[SlurmUser]) -> TreeColumns:
    """Link accounts and users into Slurm's association tree (see the module docstring), as
    columns: about 10 ms for a 10,000-association site, where an object per association and a
    walk up the tree per user took over 100.

    Raises InvalidValue if an account name is repeated, a parent or account is unknown, the
    accounts form a cycle, or a (user, account) pair is repeated. The result does not depend on
    the order of the inputs.
    """
    accounts = list(accounts)
    users = list(users)
    by_name: dict[str, SlurmAccount] = {}
    for account in accounts:
        if account.name in by_name:
            raise InvalidValue(f"account {account.name!r} appears twice")
        by_name[account.name] = account
    # Root and the accounts, in the order their lineage is first worked out: "source" indices.
    lineage_of: dict[str, bytes] = {ROOT: b"/"}

    def account_lineage(name: str, path: tuple[str, ...] = ()) -> bytes:
        known = lineage_of.get(name)
        if known is not None:
            return known
        if name in path:
            raise InvalidValue(f"accounts form a cycle: {' -> '.join((*path, name))}")
        spec = by_name.get(name)
        if spec is None:
            raise InvalidValue(f"unknown account {name!r} (parent of {path[-1]!r})")
        lineage = account_lineage(spec.parent, (*path, name)) + name.encode() + b"/"
        lineage_of[name] = lineage
        return lineage

    for account in accounts:
        account_lineage(account.name)
    account_names = list(lineage_of)
    source_of = {name: index for index, name in enumerate(account_names)}
    # In bulk (a comprehension per column, a set for repeats); a bad input is then found again
    # user by user, for the error of the first one, as a loop checking each in turn gives.
    pairs = [(user.name, user.account) for user in users]
    holders = [source_of.get(account) for _, account in pairs]
    if len(set(pairs)) != len(pairs) or None in holders:
        _refuse_users(pairs, source_of)
    usages = [float(user.usage) for user in users]
    user_lineages = [lineage_of[account] + b"0-" + name.encode() + b"/" for name, account in pairs]

    specs = [by_name[name] for name in account_names[1:]]
    lineages = [*lineage_of.values(), *user_lineages]
    # Root first (its lineage `/` is a prefix of every other). Python's sort is stable, so an
    # account whose lineage equals a user's (account `0-u` beside user `u`) comes first.
    order = sorted(range(len(lineages)), key=lineages.__getitem__)
    source_parent = np.array(
        [-1, *(source_of[spec.parent] for spec in specs), *holders], dtype=np.intp
    )
    raw_shares: list[int | None] = [
        None,
        *(spec.shares for spec in specs),
        *(user.shares for user in users),
    ]
    share_values = np.array([0, *raw_shares[1:]], dtype=np.int64)
    uses_parent = share_values == PARENT
    # `_set_assoc_parent_and_user`: the fs parent is the nearest ancestor that is not `parent`
    # (for a `parent` association, and for a child of one, both rules of the module docstring
    # come to that; for any other it is the direct parent). A parent's lineage is shorter than
    # its child's, so by length every account's parent is resolved before it.
    resolved = np.arange(len(account_names), dtype=np.intp)
    for index in sorted(range(1, len(account_names)), key=lambda i: len(lineages[i])):
        if uses_parent[index]:
            resolved[index] = resolved[source_parent[index]]
    source_fs_parent = np.full(len(lineages), -1, dtype=np.intp)
    source_fs_parent[1:] = resolved[source_parent[1:]]
    # `_get_children_level_shares`: a `parent` child counts the shares of its own children list,
    # which is empty (nothing has a `parent` association as fs parent). A uint32 sum in Slurm.
    level_of = np.zeros(len(account_names), dtype=np.int64)
    np.add.at(level_of, source_fs_parent[1:], np.where(uses_parent, 0, share_values)[1:])
    level_of %= _UINT32
    source_level = np.zeros(len(lineages), dtype=np.int64)
    source_level[1:] = level_of[source_fs_parent[1:]]

    perm = np.array(order, dtype=np.intp)
    position = np.empty_like(perm)
    position[perm] = np.arange(len(perm), dtype=np.intp)
    parent = _remap(source_parent[perm], position)
    is_user = perm >= len(account_names)
    # `0 + amount` as `_apply_new_usage` starts from a zero usage_raw: -0.0 becomes 0.0.
    amounts = np.zeros(len(perm), dtype=np.longdouble)
    amounts[is_user] += np.array(usages, dtype=np.float64).astype(np.longdouble)[
        perm[is_user] - len(account_names)
    ]
    user_names: list[str | None] = [None] * len(account_names)
    user_names += [name for name, _ in pairs]
    holder_names = [*account_names, *(account for _, account in pairs)]
    return TreeColumns(
        account=[holder_names[i] for i in order],
        user=[user_names[i] for i in order],
        shares=[raw_shares[i] for i in order],
        lineage=[lineages[i] for i in order],
        parent=parent,
        fs_parent=_remap(source_fs_parent[perm], position),
        is_user=is_user,
        uses_parent=uses_parent[perm],
        share_values=share_values[perm],
        level_shares=source_level[perm],
        usage=_usage_sums(amounts, parent, is_user),
    )


def _refuse_users(pairs: list[tuple[str, str]], source_of: dict[str, int]) -> None:
    """Raise InvalidValue for the first repeated or unknown-account user of `pairs`."""
    seen: set[tuple[str, str]] = set()
    for name, account in pairs:
        if (name, account) in seen:
            raise InvalidValue(f"user ({name}, {account}) appears twice")
        seen.add((name, account))
        if account not in source_of:
            raise InvalidValue(f"unknown account {account!r} of user {name!r}")
    raise AssertionError("no bad user among the users refused")


def build_tree(accounts: Iterable[SlurmAccount], users: Iterable[SlurmUser]) -> SlurmTree:
    """`tree_columns` as linked `Association` objects (see the module docstring).

    Raises InvalidValue as `tree_columns` does.
    """
    columns = tree_columns(accounts, users)
    nodes = [
        Association(
            account=account,
            user=user,
            shares=shares,
            lineage=lineage,
            level_shares=level_shares,
            usage_raw=usage_raw,
        )
        for account, user, shares, lineage, level_shares, usage_raw in zip(
            columns.account,
            columns.user,
            columns.shares,
            columns.lineage,
            columns.level_shares.tolist(),
            list(columns.usage),
            strict=True,
        )
    ]
    for node, parent, fs_parent in zip(
        nodes[1:], columns.parent[1:].tolist(), columns.fs_parent[1:].tolist(), strict=True
    ):
        node.parent = nodes[parent]
        node.parent.children.append(node)
        node.fs_parent = nodes[fs_parent]
        node.fs_parent.fs_children.append(node)
    return SlurmTree(root=nodes[0], associations=tuple(nodes))


def _remap(source: NDArray[np.intp], position: NDArray[np.intp]) -> NDArray[np.intp]:
    """Source indices (-1 for none) as lineage positions."""
    return np.where(source >= 0, position[source], -1)


def _usage_sums(
    amounts: NDArray[np.longdouble], parent: NDArray[np.intp], is_user: NDArray[np.bool_]
) -> NDArray[np.longdouble]:
    """`_apply_new_usage`: each user's usage added to it and to every direct ancestor, users in
    lineage order. So an association's usage is the left-to-right long double sum, from 0, of
    the users at or below it taken in lineage order (which `parent` says nothing about: an
    account may sit between a user and its own sub-accounts, see `tree_columns`)."""
    sums = np.zeros(len(amounts), dtype=np.longdouble)
    member = np.flatnonzero(is_user)
    # One (ancestor, user) pair per user and ancestor, the user itself included.
    ancestors, members = [member], [member]
    up = parent[member]
    while True:
        above = up >= 0
        up, member = up[above], member[above]
        if not len(up):
            break
        ancestors.append(up)
        members.append(member)
        up = parent[up]
    ancestor, member = np.concatenate(ancestors), np.concatenate(members)
    if not len(ancestor):
        return sums
    by_ancestor = np.lexsort((member, ancestor))
    ancestor, member = ancestor[by_ancestor], member[by_ancestor]
    starts = np.flatnonzero(np.r_[True, ancestor[1:] != ancestor[:-1]])
    lengths = np.diff(np.r_[starts, len(ancestor)])
    sums[ancestor[starts]] = _sequential_sums(amounts[member], starts, lengths)
    return sums


def _sequential_sums(
    values: NDArray[np.longdouble], starts: NDArray[np.intp], lengths: NDArray[np.intp]
) -> NDArray[np.longdouble]:
    """Each run `values[start:start + length]` (length >= 1) summed left to right, as C's `+=`
    loop does: the order shows in a long double sum's last bits, and numpy's add.reduce (np.sum,
    reduceat) sums pairwise. cumsum (add.accumulate) is sequential, so the runs are laid out as
    the rows of a matrix, padded with zeros (x + 0 == x), and the last column of its cumsum
    along the rows taken. Runs of lengths in [2^(k-1), 2^k) share a matrix: the padding at most
    doubles it, whatever the mix of long and short runs."""
    sums = np.zeros(len(starts), dtype=np.longdouble)
    size_class = np.frexp(lengths.astype(np.float64))[1]
    # set(), not np.unique: that imports numpy.ma on first use (~10 ms).
    for cls in sorted(set(size_class.tolist())):
        rows = np.flatnonzero(size_class == cls)
        row_lengths = lengths[rows]
        width = int(row_lengths.max())
        columns = np.arange(width)
        inside = columns < row_lengths[:, None]
        padded = np.zeros((len(rows), width), dtype=np.longdouble)
        padded[inside] = values[(starts[rows, None] + columns)[inside]]
        sums[rows] = np.cumsum(padded, axis=1)[:, -1]
    return sums


def iter_fs_tree(assoc: Association) -> Iterator[Association]:
    """The association and everything below it in the fair-share tree, parents first."""
    yield assoc
    for child in assoc.fs_children:
        yield from iter_fs_tree(child)


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
