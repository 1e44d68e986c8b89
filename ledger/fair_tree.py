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

Needs `numpy.longdouble` to be the x87 80-bit type (x86-64 Linux). On platforms where it is a
plain double (Windows, macOS on ARM) the results are those of a double implementation;
`LONG_DOUBLE_IS_X87` tells which.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ledger.slurm_shares import (
    NO_VAL,
    PARENT,
    Association,
    AssociationRows,
    LongDouble,
    SlurmAccount,
    SlurmUser,
    SshareRow,
    build_tree,
)
from ledger.slurm_shares import ROOT as ROOT
from ledger.sshare_format import format_double, sshare_columns

LONG_DOUBLE_IS_X87: bool = np.finfo(np.longdouble).nmant == 63
"""True where numpy.longdouble has a 64-bit significand, as Slurm's long double on x86-64."""

_NO_VAL_LD = LongDouble(NO_VAL)
_INF_LD = LongDouble(np.inf)
_ZERO_LD = LongDouble(0)


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
class FairTreeResult(AssociationRows[FairTreeRow]):
    """Every association, in sshare (lineage) order, root first; and N, the user count."""

    rows: tuple[FairTreeRow, ...]
    user_count: int


def compute_fair_tree(
    accounts: Iterable[SlurmAccount], users: Iterable[SlurmUser]
) -> FairTreeResult:
    """Fair Tree over the given accounts (below the implicit `root`) and user associations.

    Raises InvalidValue for a malformed tree (see `ledger.slurm_shares.build_tree`).
    """
    tree = build_tree(accounts, users)
    root = tree.root
    user_count = tree.user_count
    values: dict[int, _Values] = {
        # Root: S from level_shares 0, U = 1.0 (as sshare shows), NormUsage and LevelFS unset.
        id(root): _Values(norm_shares=0.0, norm_usage=None, effective=LongDouble(1), level_fs=None)
    }
    ranks: dict[int, int] = {}
    _Walk(root, user_count, values, ranks).visit(root.fs_children, account_tied=False)
    rows = []
    for assoc in tree.associations:
        value = values[id(assoc)]
        rank = ranks.get(id(assoc))
        rows.append(
            FairTreeRow(
                account=assoc.account,
                user=assoc.user,
                raw_shares=assoc.shares,
                norm_shares=value.norm_shares,
                raw_usage=float(assoc.usage_raw),
                norm_usage=None if value.norm_usage is None else float(value.norm_usage),
                effective_usage=float(value.effective),
                level_fs=value.level_fs,
                rank=rank,
                fair_share=None if rank is None else rank / user_count,
            )
        )
    return FairTreeResult(rows=tuple(rows), user_count=user_count)


def norm_shares(assoc: Association) -> float:
    """`_normalize_assoc_shares_fair_tree`: S as a C double."""
    fs_assoc = assoc.fs_parent if assoc.uses_parent and assoc.fs_parent is not None else assoc
    if not fs_assoc.level_shares or fs_assoc.shares is None:
        return 0.0
    return fs_assoc.shares / fs_assoc.level_shares


def level_fs(assoc: Association, shares_norm: float, usage_efctv: np.longdouble) -> np.longdouble:
    """`_calc_assoc_fs`: LevelFS in long double (NO_VAL for a `parent` account)."""
    if assoc.uses_parent:
        return _INF_LD if assoc.is_user else _NO_VAL_LD
    s = LongDouble(shares_norm)
    if s == _ZERO_LD:
        return _ZERO_LD
    with np.errstate(divide="ignore"):
        # U == 0 gives +inf, a valid value.
        return s / usage_efctv


def compare_level_fs(a: tuple[np.longdouble, bool], b: tuple[np.longdouble, bool]) -> int:
    """`_cmp_level_fs` on (LevelFS, is_user): higher LevelFS first, then users before accounts."""
    if a[0] != b[0]:
        return 1 if a[0] < b[0] else -1
    if a[1] == b[1]:
        return 0
    return -1 if a[1] else 1


@dataclass
class _Values:
    norm_shares: float
    norm_usage: np.longdouble | None
    effective: np.longdouble
    level_fs: np.longdouble | None


class _Walk:
    """One run of `_calc_tree_fs`, with its `rank` and `rnt` counters."""

    def __init__(
        self,
        root: Association,
        user_count: int,
        values: dict[int, _Values],
        ranks: dict[int, int],
    ) -> None:
        self.root = root
        self.user_count = user_count
        self.values = values
        self.ranks = ranks
        self.rank = user_count
        self.rnt = user_count

    def calc_assoc_fs(self, assoc: Association) -> np.longdouble:
        parent = assoc.fs_parent
        assert parent is not None
        parent_usage = parent.usage_raw
        effective = _ZERO_LD if parent_usage == _ZERO_LD else assoc.usage_raw / parent_usage
        root_usage = self.root.usage_raw
        if root_usage == _ZERO_LD:
            usage_norm = _ZERO_LD
        else:
            usage_norm = min(assoc.usage_raw / root_usage, LongDouble(1))
        shares = norm_shares(assoc)
        lf = level_fs(assoc, shares, effective)
        self.values[id(assoc)] = _Values(
            norm_shares=shares,
            norm_usage=usage_norm,
            effective=effective,
            level_fs=None if (assoc.uses_parent and not assoc.is_user) else lf,
        )
        return lf

    def visit(self, siblings: list[Association], account_tied: bool) -> None:
        keyed = [(self.calc_assoc_fs(assoc), assoc.is_user, assoc) for assoc in siblings]
        # qsort with `_cmp_level_fs`; glibc's qsort is a merge sort here, so entries that compare
        # equal keep their children-list (lineage) order, which Python's sort also guarantees.
        # As a key: higher LevelFS first, then users before accounts (compare_level_fs's order;
        # LevelFS is never NaN: U = 0 gives inf, S = 0 gives 0), at a tenth of a cmp's cost.
        keyed.sort(key=_level_fs_order)
        prev_level_fs = _NO_VAL_LD
        for index, (lf, is_user, assoc) in enumerate(keyed):
            tied = True if index == 0 and account_tied else bool(prev_level_fs == lf)
            if is_user:
                if not tied:
                    self.rank = self.rnt
                self.ranks[id(assoc)] = self.rank
                self.rnt -= 1
            else:
                # `_count_tied_accounts` always returns 0: no merge, descend into this one alone.
                self.visit(assoc.fs_children, account_tied=tied)
            prev_level_fs = lf


def _level_fs_order(keyed: tuple[np.longdouble, bool, Association]) -> tuple[np.longdouble, bool]:
    return -keyed[0], not keyed[1]
