"""Slurm's Fair Tree fair-share (the default since Slurm 19.05), as a pure function.

This reproduces Slurm 25.05's *code* (`src/plugins/priority/multifactor/fair_tree.c`, and
`_normalize_assoc_shares_fair_tree` in `src/common/assoc_mgr.c`), not its documentation, where the
two disagree. The tree it runs on (fs parents, `Fairshare=parent` flattening, level shares, usage
sums, sibling order) is built by `ledger.slurm_shares`.

Per association `a` with fair-share parent `p` (`_calc_assoc_fs`):

* NormShares `S = fa.shares / fa.level_shares` (a C double; 0 if level_shares is 0), where
  `fa` is `p` if `a` is `parent`, else `a` itself. Root's S is 0.
* EffectvUsage `U = a.usage / p.usage` (long double; 0 if p has no usage). Root's U is 1.
* NormUsage `a.usage / root.usage`, capped at 1 (0 if root has no usage). Shown, unused.
* LevelFS: +inf for a `parent` user; Slurm's NO_VAL (4294967294.0) for a `parent` account; 0 if
  S == 0 (even when U is 0 too); otherwise `S / U` in long double (U == 0 gives +inf).

Ranking (`_apply_priority_fs` / `_calc_tree_fs`): N = number of user associations, and
`rank = rnt = N` ("rank, no ties"). Starting with root's children list, every list is sorted by
LevelFS descending, users before accounts on equal LevelFS, and walked in that order:

* an entry is *tied* if its LevelFS `==` the previous entry's (the first entry of a list is tied
  iff the account that owns the list was tied; and, as in Slurm, `prev` starts at NO_VAL, so a
  first entry whose LevelFS is exactly 4294967294.0 is tied too);
* a user gets `fs = rank / N` after `rank = rnt` unless it is tied; then `rnt -= 1`;
* an account is descended into, passing down whether it was tied.

So ties are competition-ranked (1, 2, 2, 4), and a tied account's first user keeps the rank of
the user visited just before it.

The traps, all reproduced:

* **Tied sibling accounts are not merged** (the documentation says their children lists are merged
  before descending). `_count_tied_accounts` only counts *users* after an account, and users sort
  before accounts on a tie, so it always returns 0. Tied accounts are visited one after the other,
  in children-list (lineage, i.e. account-name byte) order, the sort being stable; the later
  account's first user continues the rank of the last user of the earlier one. An all-idle tree
  therefore does not give everybody 1.0.
* **Long double.** U and LevelFS are C `long double`, 80-bit on x86-64, and ties are exact `==`
  on them. Here they are `numpy.longdouble`. An implementation in Python floats (doubles) orders
  near-equal siblings differently: `S / U` is rounded to 53 bits instead of 64, so two values that
  are distinct in long double can collide in double (a tie that Slurm does not see) and two values
  that are ordered one way in long double can be ordered the other way, or be distinct, in double.
  `tests/unit/test_fair_tree.py` holds such a tree. S stays a double as in Slurm
  (`shares_norm` is a `double`), and is widened to long double before the division.
* **`Fairshare=parent`**: see `ledger.slurm_shares`: the children of a `parent` account compete
  directly with its siblings; a `parent` user has LevelFS +inf and shows its fs parent's S.
* `FairShareDampeningFactor` plays no part in Fair Tree.

How it is computed: on the tree as columns (`ledger.slurm_shares.tree_columns`), S, U, NormUsage
and LevelFS are numpy element-wise operations, each value the one C computes (no reduction
reorders anything); every sibling list is sorted by one stable lexsort (`sibling_order`); only the
walk over the sorted lists, which `rank` and `rnt` make sequential, is a Python loop, per account.
`tests/unit/fair_tree_oracle.py` keeps the first, one-object-per-association implementation, and
the tests hold this one to it bit for bit. The rows are made only when asked for.

Needs `numpy.longdouble` to be the x87 80-bit type (x86-64 Linux). On platforms where it is a
plain double (Windows, macOS on ARM) the results are those of a double implementation;
`LONG_DOUBLE_IS_X87` tells which.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ledger.slurm_shares import (
    NO_VAL,
    PARENT,
    AssociationRows,
    LongDouble,
    SlurmAccount,
    SlurmUser,
    SshareRow,
    TreeColumns,
    tree_columns,
)
from ledger.slurm_shares import ROOT as ROOT
from ledger.sshare_format import format_double, sshare_columns

if TYPE_CHECKING:  # numpy.typing costs a millisecond at start-up, and annotations are strings
    from numpy.typing import NDArray

LONG_DOUBLE_IS_X87: bool = np.finfo(np.longdouble).nmant == 63
"""True where numpy.longdouble has a 64-bit significand, as Slurm's long double on x86-64."""

_NO_VAL_LD = LongDouble(NO_VAL)


@dataclass(frozen=True)
class FairTreeRow(SshareRow):
    """One association as `sshare -a -l` shows it under Fair Tree.

    * `user` is None for accounts and root; `account` is the account itself for an account row,
      the holding account for a user row, `root` for root.
    * `raw_shares`: None for root; `PARENT` for `Fairshare=parent`.
    * `norm_shares`: S (a double). `raw_usage`: Slurm's long double usage as a float (sshare prints
      it truncated to an integer, see `printed_raw_usage`).
    * `norm_usage`: None for root (never computed by Slurm: sshare prints it blank).
    * `effective_usage`: U (usage / fs parent's usage), 1.0 for root.
    * `level_fs`: the long double LevelFS; +inf for a `parent` user; None for root and for a
      `parent` account (Slurm stores NO_VAL there; sshare prints LevelFS blank for every `parent`
      row and for root).
    * `rank` and `fair_share` (= rank / user_count): users only, None for accounts and root.
    """

    account: str
    user: str | None
    raw_shares: int | None
    norm_shares: float
    raw_usage: float
    norm_usage: float | None
    effective_usage: float
    level_fs: np.longdouble | None
    rank: int | None
    fair_share: float | None

    def sshare_fields(self) -> list[str]:
        """The columns Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|
        FairShare|LevelFS exactly as `sshare -a -l -p` prints them (`%f`, blanks, `inf`)."""
        blank_level_fs = self.raw_shares == PARENT or self.level_fs is None
        return [
            *sshare_columns(self),
            "" if blank_level_fs else format_double(float(self.level_fs)),  # type: ignore[arg-type]
        ]


@dataclass(frozen=True)
class _Columns:
    """Fair Tree's numbers per association, indexed as the tree's columns (root at 0)."""

    tree: TreeColumns
    norm_shares: NDArray[np.float64]
    norm_usage: NDArray[np.longdouble]
    effective: NDArray[np.longdouble]
    level_fs: NDArray[np.longdouble]
    rank: NDArray[np.int64]  # 0 for accounts and root


class FairTreeResult(AssociationRows[FairTreeRow]):
    """Every association, in sshare (lineage) order, root first (`rows`); and N, the user count.

    The rows are made on first use: a 10,000-association site's take longer than the whole
    computation, and update-fshare only asks for `fair_shares`.
    """

    def __init__(self, columns: _Columns) -> None:
        self._columns = columns
        self.user_count: int = columns.tree.user_count

    @functools.cached_property
    def rows(self) -> tuple[FairTreeRow, ...]:  # type: ignore[override]  # computed, read-only
        columns = self._columns
        tree = columns.tree
        user_count = self.user_count
        norm_usage: list[float | None] = columns.norm_usage.astype(np.float64).tolist()
        norm_usage[0] = None  # root's: never computed by Slurm
        level_fs: list[np.longdouble | None] = list(columns.level_fs)
        level_fs[0] = None
        for index in np.flatnonzero(tree.uses_parent & ~tree.is_user).tolist():
            level_fs[index] = None  # NO_VAL, printed blank
        ranks: list[int | None] = [
            rank if is_user else None
            for rank, is_user in zip(columns.rank.tolist(), tree.is_user.tolist(), strict=True)
        ]
        return tuple(
            FairTreeRow(
                account=account,
                user=user,
                raw_shares=shares,
                norm_shares=s,
                raw_usage=raw_usage,
                norm_usage=usage_norm,
                effective_usage=u,
                level_fs=lf,
                rank=rank,
                fair_share=None if rank is None else rank / user_count,
            )
            for account, user, shares, s, raw_usage, usage_norm, u, lf, rank in zip(
                tree.account,
                tree.user,
                tree.shares,
                columns.norm_shares.tolist(),
                tree.usage.astype(np.float64).tolist(),
                norm_usage,
                columns.effective.astype(np.float64).tolist(),
                level_fs,
                ranks,
                strict=True,
            )
        )

    def fair_shares(self) -> dict[tuple[str, str], float]:
        """Fair-share factor per (account, user), without making the rows."""
        columns = self._columns
        tree = columns.tree
        users = np.flatnonzero(tree.is_user)
        factors = (columns.rank[users] / self.user_count).tolist()
        accounts, names = tree.account, tree.user
        return {
            (accounts[index], names[index]): factor  # type: ignore[misc]
            for index, factor in zip(users.tolist(), factors, strict=True)
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FairTreeResult):
            return NotImplemented
        return self.user_count == other.user_count and self.rows == other.rows

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"FairTreeResult(rows=<{len(self._columns.tree)} rows>, user_count={self.user_count})"
        )


def compute_fair_tree(
    accounts: Iterable[SlurmAccount], users: Iterable[SlurmUser]
) -> FairTreeResult:
    """Fair Tree over the given accounts (below the implicit `root`) and user associations.

    Raises InvalidValue for a malformed tree (see `ledger.slurm_shares.tree_columns`).
    """
    tree = tree_columns(accounts, users)
    size = len(tree)
    is_user, uses_parent = tree.is_user, tree.uses_parent
    # Root points at itself, so that the columns below stay aligned; its values are set after.
    fs_parent = tree.fs_parent.copy()
    fs_parent[0] = 0
    usage = tree.usage
    parent_usage = usage[fs_parent]
    with np.errstate(divide="ignore", invalid="ignore"):
        # Element-wise, so each value is the C one: no reduction, no reordering.
        effective = np.where(parent_usage == 0, LongDouble(0), usage / parent_usage)
        if usage[0] == 0:
            norm_usage = np.zeros(size, dtype=np.longdouble)
        else:
            norm_usage = np.minimum(usage / usage[0], LongDouble(1))
    effective[0] = 1  # sshare shows root's U as 1.0
    # `_normalize_assoc_shares_fair_tree`: S of the association, or of its fs parent if it is
    # `parent`, as a C double. Both counts are below 2^32, exact in a double, so numpy's
    # correctly rounded division is C's (and Python's int / int). Root has level_shares 0.
    shares_of = np.where(uses_parent, fs_parent, np.arange(size))
    level = tree.level_shares[shares_of].astype(np.float64)
    norm_shares = np.zeros(size, dtype=np.float64)
    np.divide(
        tree.share_values[shares_of].astype(np.float64), level, out=norm_shares, where=level != 0
    )
    # `_calc_assoc_fs`: S widened to long double over U; U == 0 gives +inf, S == 0 gives 0.
    s = norm_shares.astype(np.longdouble)
    with np.errstate(divide="ignore", invalid="ignore"):
        level_fs = np.where(s == 0, LongDouble(0), s / effective)
    level_fs[uses_parent & is_user] = np.inf
    level_fs[uses_parent & ~is_user] = _NO_VAL_LD
    rank = _ranks(tree, level_fs, tree.user_count)
    return FairTreeResult(_Columns(tree, norm_shares, norm_usage, effective, level_fs, rank))


def sibling_order(
    group: NDArray[np.intp], level_fs: NDArray[np.longdouble], is_user: NDArray[np.bool_]
) -> NDArray[np.intp]:
    """Every sibling list sorted as `_calc_tree_fs` sorts it, all at once: the indices by
    group, then LevelFS descending, then users before accounts (`_cmp_level_fs`), then index.

    Slurm's qsort is glibc's merge sort here, so entries that compare equal keep their
    children-list (lineage, i.e. index) order; lexsort is stable too. LevelFS is never NaN
    (U = 0 gives inf, S = 0 gives 0), and long double `<` is exact, as C's."""
    return np.lexsort((~is_user, -level_fs, group))


def _ranks(
    tree: TreeColumns, level_fs: NDArray[np.longdouble], user_count: int
) -> NDArray[np.int64]:
    """`_apply_priority_fs` / `_calc_tree_fs`: every user's rank (see the module docstring)."""
    rank = np.zeros(len(tree), dtype=np.int64)
    entries = np.arange(1, len(tree))  # root is in no list
    if not len(entries):
        return rank
    group = tree.fs_parent[entries]
    order = entries[sibling_order(group, level_fs[entries], tree.is_user[entries])]
    group = tree.fs_parent[order]
    sorted_fs = level_fs[order]
    first = np.r_[True, group[1:] != group[:-1]]
    # `prev` starts at NO_VAL in each list, so a first entry at exactly NO_VAL is tied too.
    previous = np.r_[_NO_VAL_LD, sorted_fs[:-1]]
    previous[first] = _NO_VAL_LD
    tied = sorted_fs == previous
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(order)]
    # A list's first entry is also tied if the account that owns it was: accounts by lineage
    # (every fs parent before its children), so each owner's own tie is settled first.
    slot = np.empty(len(tree), dtype=np.intp)
    slot[order] = np.arange(len(order))
    owners = group[starts]
    for owner, start in zip(owners.tolist(), starts.tolist(), strict=True):
        if owner and tied[slot[owner]]:
            tied[start] = True
    # The walk: a list's users in turn, descending into each account where it stands.
    bounds = dict(
        zip(owners.tolist(), zip(starts.tolist(), ends.tolist(), strict=True), strict=True)
    )
    accounts_at: dict[int, list[int]] = {}
    groups = group.tolist()
    for at in np.flatnonzero(~tree.is_user[order]).tolist():
        accounts_at.setdefault(groups[at], []).append(at)
    members = order.tolist()
    visited: list[int] = []

    def visit(owner: int) -> None:
        span = bounds.get(owner)
        if span is None:
            return  # no children: an account without users, or a `parent` account
        cursor, end = span
        for at in accounts_at.get(owner, ()):
            visited.extend(range(cursor, at))
            visit(members[at])
            cursor = at + 1
        visited.extend(range(cursor, end))

    visit(0)
    slots = np.array(visited, dtype=np.intp)
    # rnt counts down from N by one per user; rank takes rnt's value unless the user is tied,
    # i.e. it is N minus the visit number of the last untied user (N until there is one).
    untied = np.maximum.accumulate(np.where(tied[slots], 0, np.arange(len(slots))))
    rank[order[slots]] = user_count - untied
    return rank
