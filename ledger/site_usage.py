"""Usage and fair-share of a whole site at one moment: pure functions over the site state and
per-period charge totals. Projections, live commands and as-of queries all call these."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from ledger.fairshare import BankNode, Ranking, UserLeaf, rank_associations
from ledger.state import SiteState, reset_period_seconds
from ledger.usage import UsageParams, bin_count, decay_bins, period_of, usage_bins

AssocKey = tuple[str, str]  # (username, bank)


def usage_params(state: SiteState) -> UsageParams:
    config = state.config
    return UsageParams(
        epoch=state.epoch,
        half_life=float(config["priority_decay_half_life"]),
        reset_period=reset_period_seconds(config),
        decay_factor=float(config["decay_factor"]),
    )


class AssociationResolver:
    """Which association a job belongs to: its username (or the one user holding its userid)
    and its bank (or that user's default bank). Resolved when usage is computed, so a job that
    arrived before its association counts once the association exists."""

    def __init__(self, state: SiteState) -> None:
        self.state = state
        owners: dict[int, set[str]] = defaultdict(set)
        for assoc in state.all_associations():
            owners[assoc.userid].add(assoc.username)
        self.user_of_uid = {
            uid: next(iter(names)) for uid, names in owners.items() if len(names) == 1
        }
        self._resolved: dict[tuple[int | None, str | None, str | None], AssocKey | None] = {}

    def resolve_cached(
        self, userid: int | None, username: str | None, bank: str | None
    ) -> AssocKey | None:
        """resolve(), once per job identity: a site's totals repeat each identity per period."""
        identity = (userid, username, bank)
        if identity not in self._resolved:
            self._resolved[identity] = self.resolve(userid, username, bank)
        return self._resolved[identity]

    def resolve(
        self, userid: int | None, username: str | None, bank: str | None
    ) -> AssocKey | None:
        user = username or (self.user_of_uid.get(userid) if userid is not None else None)
        if user is None:
            return None
        chosen = bank or self.state.default_banks.get(user)
        if chosen is None or self.state.association(user, chosen) is None:
            return None
        return (user, chosen)


class PeriodTotal(NamedTuple):
    """The charges of one job identity (userid, username, bank as recorded) in one period.

    A named tuple, not a dataclass: a site's usage reads hundreds of thousands of them."""

    userid: int | None
    username: str | None
    bank: str | None
    period: int
    charge: float


@dataclass(frozen=True)
class AssociationUsage:
    usage: float
    bins: list[float]  # [R_c, R_{c-1}, ..., R_{c-B}]


def window(state: SiteState, at: float) -> tuple[int, int]:
    """The first and last period that count at time `at`."""
    params = usage_params(state)
    current = period_of(at, params)
    return current - bin_count(params), current


def association_usage(
    state: SiteState,
    totals: Iterable[PeriodTotal],
    at: float,
    cleared: Mapping[float, Iterable[PeriodTotal]] | None = None,
) -> dict[AssocKey, AssociationUsage]:
    """Decayed usage at `at` of every association (active or not).

    `cleared[X]` holds the totals of jobs that ended at or before X: X is the usage cutoff of
    some associations (SiteState.usage_cutoff), and for those (only) these charges stop
    counting."""
    params = usage_params(state)
    current = period_of(at, params)
    resolver = AssociationResolver(state)
    per_assoc: dict[AssocKey, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for total in totals:
        key = resolver.resolve_cached(total.userid, total.username, total.bank)
        if key is not None:
            per_assoc[key][total.period].append(total.charge)
    cutoffs: dict[AssocKey, float] = {}
    if cleared:
        cutoffs = {(a.username, a.bank): state.usage_cutoff(a) for a in state.all_associations()}
    for cutoff, dropped in (cleared or {}).items():
        for total in dropped:
            key = resolver.resolve_cached(total.userid, total.username, total.bank)
            if key is not None and cutoffs.get(key) == cutoff:
                per_assoc[key][total.period].append(-total.charge)
    out = {}
    for assoc in state.all_associations():
        key = (assoc.username, assoc.bank)
        periods = {p: math.fsum(v) for p, v in per_assoc[key].items()} if key in per_assoc else {}
        bins = usage_bins(periods, current, params)
        out[key] = AssociationUsage(usage=decay_bins(bins, params), bins=bins)
    return out


def bank_usage(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> dict[str, float]:
    """Each bank's usage: the sum over the active associations below it."""
    totals: dict[str, list[float]] = defaultdict(list)
    for assoc in state.all_associations():
        if not assoc.active:
            continue
        value = usage[(assoc.username, assoc.bank)].usage
        for bank in [assoc.bank, *state.ancestors(assoc.bank)]:
            totals[bank].append(value)
    return {name: math.fsum(totals.get(name, [])) for name in state.banks}


def fairshare_tree(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> BankNode | None:
    """The active part of the bank tree with each active association's usage: what the
    weighted walk ranks. An inactive bank leaves out its whole subtree."""
    root = state.root_bank()
    if root is None or not root.active:
        return None

    sub_banks: dict[str, list[str]] = defaultdict(list)
    for bank in state.banks.values():
        if bank.active and bank.parent_bank:
            sub_banks[bank.parent_bank].append(bank.bank)
    members: dict[str, list[UserLeaf]] = defaultdict(list)
    for a in state.all_associations():
        if a.active:
            leaf = UserLeaf(a.username, a.bank, a.shares, usage[(a.username, a.bank)].usage)
            members[a.bank].append(leaf)

    def node(name: str) -> BankNode:
        children = tuple(node(child) for child in sorted(sub_banks[name]))
        users = tuple(sorted(members[name], key=lambda leaf: leaf.username))
        return BankNode(name=name, shares=state.banks[name].shares, children=children, users=users)

    return node(root.bank)


def site_ranking(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> Ranking:
    """The weighted walk over the site's active tree: every active association's rank."""
    tree = fairshare_tree(state, usage)
    return rank_associations(tree) if tree is not None else Ranking({}, 0)


def site_fairshare(
    state: SiteState, usage: dict[AssocKey, AssociationUsage]
) -> dict[AssocKey, float]:
    """The walk's fair-share of every active association."""
    return site_ranking(state, usage).fairshare()
