"""Slurm's classic fair-share (`PriorityFlags=NO_FAIR_TREE`), as a pure function.

This reproduces Slurm 25.05's code: `_normalize_assoc_shares_traditional` (`assoc_mgr.c`) and
`set_assoc_usage_norm`, `_set_assoc_usage_efctv`, `_set_usage_efctv`, `_set_assoc_fs_factor`
(`priority_multifactor.c`). The tree (fs parents, `Fairshare=parent` flattening, level shares, usage
sums) is built by `ledger.slurm_shares`.

Per association `a` with direct parent chain up to root and fair-share parent `p`:

* NormShares `S`:
  - a `parent` association takes its fs parent's S;
  - otherwise `S = Π shares(x) / level_shares(x)` over `x` = `a` and its direct ancestors below
    root, skipping `parent` ancestors; any factor with level_shares 0 makes S = 0. C doubles,
    multiplied in that order (`S *= shares / level`). Root's own S is 1.0 (the product is empty).
* NormUsage `UN = min(1, usage / root usage)` (0 if root has no usage), long double. Root: unset.
* EffectvUsage `UE` (long double), top-down:
  - `UE = UN` if `p` is root (first tier, even for a `parent` association);
  - `UE = p.UE` if `a` is `parent`, or if its level_shares is 0;
  - `UE = UN + (p.UE - UN) * (shares / (long double) level_shares)` otherwise;
  - root's UE is 1.0.
* FairShare (users only): with `fa` = `p` if `a` is `parent` else `a`:
  `F = 0` if `fa.S <= 0`, else `F = pow(2.0, -((fa.UE / fa.S) / d))`, the exponent computed in
  long double and rounded to a double for `pow`, `d` = `FairShareDampeningFactor` (uint16,
  default 1). So a `parent` user directly under root gets `2^(-1/d)` (root's UE 1 over S 1).

Long double matters here too: an exponent that is exactly 7 in long double can be 6.999… in
double, so F prints `0.007813` instead of Slurm's `0.007812` (= 2^-7, `%f` rounding half to even).

Not implemented: `PriorityFlags=DEPTH_OBLIVIOUS`. Its effective usage of an association sums the
NormUsage of *all* its siblings as they stand in memory at that moment; siblings later in the list
(and users, whose values Slurm computes lazily) still hold the previous calculation period's value
or NO_VAL, so it cannot be reproduced exactly from one snapshot of the tree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ledger.errors import InvalidValue
from ledger.slurm_shares import (
    Association,
    AssociationRows,
    LongDouble,
    SlurmAccount,
    SlurmUser,
    SshareRow,
    build_tree,
)
from ledger.sshare_format import sshare_columns

DEFAULT_DAMPENING_FACTOR: int = 1

_ZERO_LD = LongDouble(0)
_ONE_LD = LongDouble(1)


@dataclass(frozen=True)
class ClassicRow(SshareRow):
    """One association as classic `sshare -a -l` shows it.

    * `user` is None for accounts and root; `raw_shares` None for root, `PARENT` for `parent`.
    * `norm_shares`: S. `raw_usage`: the usage as a float (printed truncated to an integer).
    * `norm_usage`: UN, None for root (unset in Slurm, printed blank).
    * `effective_usage`: UE, 1.0 for root.
    * `fair_share`: F for users; None for accounts and root (sshare prints it blank).
    """

    account: str
    user: str | None
    raw_shares: int | None
    norm_shares: float
    raw_usage: float
    norm_usage: float | None
    effective_usage: float
    fair_share: float | None

    def sshare_fields(self) -> list[str]:
        """The eight columns classic `sshare -a -l -p` prints (no LevelFS)."""
        return sshare_columns(self)


@dataclass(frozen=True)
class ClassicResult(AssociationRows[ClassicRow]):
    """Every association, in sshare (lineage) order, root first."""

    rows: tuple[ClassicRow, ...]


def compute_classic_fairshare(
    accounts: Iterable[SlurmAccount],
    users: Iterable[SlurmUser],
    fairshare_dampening_factor: int = DEFAULT_DAMPENING_FACTOR,
) -> ClassicResult:
    """Classic fair-share over the given accounts (below the implicit `root`) and users.

    Raises InvalidValue for a malformed tree (see `ledger.slurm_shares.build_tree`) or a
    dampening factor outside [1, 65535].
    """
    damp = fairshare_dampening_factor
    if isinstance(damp, bool) or not isinstance(damp, int) or not 1 <= damp <= 0xFFFF:
        raise InvalidValue(f"fairshare_dampening_factor must be in [1, 65535], got {damp!r}")
    tree = build_tree(accounts, users)
    root = tree.root
    shares: dict[int, float] = {}
    for assoc in tree.associations:  # lineage order: every fs parent comes before its children
        shares[id(assoc)] = norm_shares(assoc, shares)
    usage_norm: dict[int, np.longdouble] = {}
    usage_efctv: dict[int, np.longdouble] = {id(root): _ONE_LD}
    for assoc in tree.associations:
        if assoc.is_root:
            continue
        un = _usage_norm(assoc, root)
        usage_norm[id(assoc)] = un
        assert assoc.fs_parent is not None
        usage_efctv[id(assoc)] = effective_usage(assoc, un, usage_efctv[id(assoc.fs_parent)])
    rows = []
    for assoc in tree.associations:
        fair_share = None
        if assoc.is_user:
            fa = assoc.fs_parent if assoc.uses_parent else assoc
            assert fa is not None
            fair_share = fs_factor(usage_efctv[id(fa)], shares[id(fa)], damp)
        un_or_none = usage_norm.get(id(assoc))
        rows.append(
            ClassicRow(
                account=assoc.account,
                user=assoc.user,
                raw_shares=assoc.shares,
                norm_shares=shares[id(assoc)],
                raw_usage=float(assoc.usage_raw),
                norm_usage=None if un_or_none is None else float(un_or_none),
                effective_usage=float(usage_efctv[id(assoc)]),
                fair_share=fair_share,
            )
        )
    return ClassicResult(rows=tuple(rows))


def norm_shares(assoc: Association, computed: dict[int, float]) -> float:
    """`_normalize_assoc_shares_traditional`; `computed` holds the S of the fs parent already."""
    if assoc.uses_parent and assoc.fs_parent is not None:
        return computed[id(assoc.fs_parent)]
    value = 1.0
    node = assoc
    while node.parent is not None:
        if not node.uses_parent:
            if not node.level_shares:
                value = 0.0
            else:
                assert node.shares is not None
                value *= node.shares / node.level_shares
        node = node.parent
    return value


def effective_usage(
    assoc: Association, usage_norm: np.longdouble, parent_efctv: np.longdouble
) -> np.longdouble:
    """`_set_assoc_usage_efctv` / `_set_usage_efctv` (long double), given the fs parent's UE."""
    assert assoc.fs_parent is not None
    if assoc.fs_parent.is_root:
        return usage_norm
    if assoc.uses_parent or not assoc.level_shares:
        return parent_efctv
    assert assoc.shares is not None
    ratio = LongDouble(assoc.shares) / LongDouble(assoc.level_shares)
    return usage_norm + (parent_efctv - usage_norm) * ratio


def fs_factor(usage_efctv: np.longdouble, shares_norm: float, dampening_factor: int) -> float:
    """`_set_assoc_fs_factor`: `pow(2.0, -((UE / S) / d))`, the exponent in long double."""
    if shares_norm <= 0:
        return 0.0
    exponent = -((usage_efctv / LongDouble(shares_norm)) / LongDouble(dampening_factor))
    return math.pow(2.0, float(exponent))


def _usage_norm(assoc: Association, root: Association) -> np.longdouble:
    """`set_assoc_usage_norm`: usage / root usage, capped at 1, 0 if root has no usage."""
    if root.usage_raw == _ZERO_LD:
        return _ZERO_LD
    value = assoc.usage_raw / root.usage_raw
    return _ONE_LD if value > _ONE_LD else value
