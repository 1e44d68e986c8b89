"""Usage and fair-share of a whole site at one moment: pure functions over the site state and
per-period charge totals. Projections, live commands and as-of queries all call these."""

from __future__ import annotations

import enum
import functools
import math
from collections import defaultdict
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ledger.continuous_usage import (
    DecayParams,
    ResetPeriod,
    Settler,
    anchored_parts,
    check_span,
    decay_weight,
    last_reset,
    span_usage,
)
from ledger.errors import InvalidValue
from ledger.fairshare import (
    BankNode,
    FlatBank,
    Ranking,
    UserLeaf,
    check_association,
    check_bank,
    rank_flat,
)
from ledger.site_config import (
    CLASSIC,
    FAIR_TREE,
    RESET_PERIOD_KEY,
    WEIGHTED_WALK,
    periods_half_life,
    reset_period_seconds,
)
from ledger.state import SiteState
from ledger.usage import UsageParams, bin_count, decay_bins, period_of, usage_bins

if TYPE_CHECKING:  # numpy's import is paid by Slurm sites only (the functions import them)
    from ledger.classic_fairshare import ClassicResult
    from ledger.fair_tree import FairTreeResult
    from ledger.slurm_shares import SlurmAccount, SlurmUser

AssocKey = tuple[str, str]  # (username, bank)


class _Unseen(enum.Enum):
    """What a cache of resolved identities gives for one it has not seen (None is a value)."""

    TOKEN = 0


_UNSEEN = _Unseen.TOKEN


def record_billing(record: Mapping[str, Any]) -> float:
    """A recorded job's billing per second (continuous usage): the one fixed when it was
    recorded (ledger.ingest.job_billing), else its CPUs."""
    billing = record.get("billing")
    return float(billing) if billing is not None else float(record["ncores"])


def usage_params(state: SiteState) -> UsageParams:
    config = state.config
    return UsageParams(
        epoch=state.epoch,
        half_life=periods_half_life(config),
        reset_period=reset_period_seconds(config),
        decay_factor=float(config["decay_factor"]),
    )


class AssociationResolver:
    """Which association a job belongs to: its username (or the one user holding its userid)
    and its bank (or that user's default bank). Resolved when usage is computed, so a job that
    arrived before its association counts once the association exists."""

    def __init__(self, state: SiteState) -> None:
        self.state = state
        # Job identity (userid, username, bank) -> its association (None: none), as resolved:
        # read directly by the loops that resolve a row at a time (a method call each cost more
        # than the lookup).
        self.resolved: dict[tuple[int | None, str | None, str | None], AssocKey | None] = {}

    @functools.cached_property
    def user_of_uid(self) -> dict[int, str]:
        """The one user holding each userid (a userid two users hold resolves to no one).
        Built on first need: most jobs name their user, and a site has 10,000 associations."""
        # One pass, sets only for the few userids two users hold: a cron cycle builds it.
        owner: dict[int, str] = {}
        shared: set[int] = set()
        for assoc in self.state.all_associations():
            if owner.setdefault(assoc.userid, assoc.username) != assoc.username:
                shared.add(assoc.userid)
        for uid in shared:
            del owner[uid]
        return owner

    def resolve_cached(
        self, userid: int | None, username: str | None, bank: str | None
    ) -> AssocKey | None:
        """resolve(), once per job identity: a site's totals repeat each identity per period."""
        identity = (userid, username, bank)
        key = self.resolved.get(identity, _UNSEEN)
        if key is _UNSEEN:
            key = self.resolved[identity] = self.resolve(userid, username, bank)
        return key

    def resolve(
        self, userid: int | None, username: str | None, bank: str | None
    ) -> AssocKey | None:
        user = username or (self.user_of_uid.get(userid) if userid is not None else None)
        if user is None:
            return None
        chosen = bank or self.state.default_banks.get(user)
        # SiteState.association's look-up, inline: an as-of read resolves 30,000 identities.
        banks = self.state.associations.get(user)
        if chosen is None or banks is None or chosen not in banks:
            return None
        return (user, chosen)


# The charges of one job identity in one period: (userid, username, bank as recorded, None
# where a job named none; period; charge). A plain tuple, not a named one: a site's usage reads
# hundreds of thousands of them, and a named tuple costs several times a tuple to build
# (26,499 of one period's 34,219 totals, filtered and built: 34 against 6-10 ms).
PeriodTotal = tuple[int | None, str | None, str | None, int, float]


class AssociationUsage(NamedTuple):
    """An association's usage at an update (and its period bins under the periods model). A
    named tuple: every update makes one per association (10,000 at a large site), at a third
    of a frozen dataclass's cost."""

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
    only: set[AssocKey] | None = None,
) -> dict[AssocKey, AssociationUsage]:
    """Decayed usage at `at` of every association (active or not), or of those in `only`
    (then `totals` need hold only the totals that can resolve to them).

    `cleared[X]` holds the totals of jobs that ended at or before X: X is the usage cutoff of
    some associations (SiteState.usage_cutoff), and for those (only) these charges stop
    counting."""
    params = usage_params(state)
    current = period_of(at, params)
    resolver = AssociationResolver(state)
    per_assoc = _charges_by_period(resolver, totals)
    cutoffs: dict[AssocKey, float] = {}
    if cleared:
        cutoffs = {(a.username, a.bank): state.usage_cutoff(a) for a in state.all_associations()}
    for cutoff, dropped in (cleared or {}).items():
        for userid, username, bank, period, charge in dropped:
            key = resolver.resolve_cached(userid, username, bank)
            if key is not None and cutoffs.get(key) == cutoff:
                per_assoc.setdefault(key, {}).setdefault(period, []).append(-charge)
    out = {}
    for assoc in state.all_associations():
        key = (assoc.username, assoc.bank)
        if only is not None and key not in only:
            continue
        periods = {p: math.fsum(v) for p, v in per_assoc[key].items()} if key in per_assoc else {}
        bins = usage_bins(periods, current, params)
        out[key] = AssociationUsage(usage=decay_bins(bins, params), bins=bins)
    return out


def rebinned_usage(
    state: SiteState,
    totals: Iterable[PeriodTotal],
    at: float,
    kept: Mapping[AssocKey, list[float]],
    periods: set[int],
    resolver: AssociationResolver | None = None,
) -> dict[AssocKey, AssociationUsage]:
    """association_usage(...) of the associations in `kept` (their bins at `at` as last
    computed, in the same period) whose totals changed only in `periods`: those bins are summed
    anew from `totals` (which must hold every total of those periods that can resolve to them),
    the others kept. The same numbers: each bin is its period's correctly rounded sum either
    way. No usage cutoff may fall in the window (association_usage takes those charges out).
    `resolver`: one already made for `state`, whose resolved identities are reused."""
    params = usage_params(state)
    current = period_of(at, params)
    per_assoc = _charges_by_period(resolver or AssociationResolver(state), totals, kept, periods)
    out = {}
    for key, old in kept.items():
        bins = list(old)
        charges = per_assoc.get(key, {})
        for period in periods:
            age = current - period
            if 0 <= age < len(bins):
                bins[age] = math.fsum(charges.get(period, []))
        out[key] = AssociationUsage(usage=decay_bins(bins, params), bins=bins)
    return out


def _charges_by_period(
    resolver: AssociationResolver,
    totals: Iterable[PeriodTotal],
    keys: Container[AssocKey] | None = None,
    periods: Container[int] | None = None,
) -> dict[AssocKey, dict[int, list[float]]]:
    """The totals' charges by association and period (only those of `keys` in `periods`, if
    given): lists for math.fsum. An association some total resolves to has an entry, even if
    `periods` kept none of its charges."""
    per_assoc: dict[AssocKey, dict[int, list[float]]] = {}
    # Each job identity's association's charges by period, found once per identity: a site's
    # totals repeat each identity per period, and an as-of read goes through 75,000 of them
    # (30,000 identities). A miss is found by get, not by a KeyError (half the cost), and the
    # filters are tested here, not through a function.
    targets: dict[tuple[int | None, str | None, str | None], dict[int, list[float]] | None] = {}
    resolve = resolver.resolve_cached
    for userid, username, bank, period, charge in totals:
        identity = (userid, username, bank)
        target = targets.get(identity, _UNSEEN)
        if target is _UNSEEN:
            key = resolve(userid, username, bank)
            target = targets[identity] = (
                None
                if key is None or (keys is not None and key not in keys)
                else per_assoc.setdefault(key, {})
            )
        if target is None or (periods is not None and period not in periods):
            continue
        charges = target.get(period)
        if charges is None:
            target[period] = [charge]
        else:
            charges.append(charge)
    return per_assoc


def bank_usage(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> dict[str, float]:
    """Each bank's usage: the sum over the active associations below it."""
    own: dict[str, list[float]] = defaultdict(list)
    for assoc in state.all_associations():
        if assoc.active:
            own[assoc.bank].append(usage[(assoc.username, assoc.bank)].usage)
    sub_banks: dict[str, list[str]] = defaultdict(list)
    for name, bank in state.banks.items():
        if bank.parent_bank:
            sub_banks[bank.parent_bank].append(name)
    below: dict[str, list[float]] = {}

    def values_below(name: str) -> list[float]:
        """The usages of the bank's subtree, each bank's list made once from its children's."""
        values = below.get(name)
        if values is None:
            values = list(own.get(name, []))
            for sub in sub_banks.get(name, []):
                values += values_below(sub)
            below[name] = values
        return values

    # The fsum of every usage below the bank, not of its sub-banks' sums: those are rounded,
    # and a sum of them could differ in the last bit.
    return {name: math.fsum(values_below(name)) for name in state.banks}


def fairshare_tree(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> BankNode | None:
    """The active part of the bank tree with each active association's usage: what the
    weighted walk ranks. An inactive bank leaves out its whole subtree."""
    root = state.root_bank()
    if root is None or not root.active:
        return None

    sub_banks = _active_sub_banks(state)
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


def _active_sub_banks(state: SiteState) -> dict[str, list[str]]:
    sub_banks: dict[str, list[str]] = defaultdict(list)
    for bank in state.banks.values():
        if bank.active and bank.parent_bank:
            sub_banks[bank.parent_bank].append(bank.bank)
    return sub_banks


def _flat_tree(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> FlatBank | None:
    """fairshare_tree in the walk's flat form, without a UserLeaf per association; it checks
    the same values and raises the same error first."""
    root = state.root_bank()
    if root is None or not root.active:
        return None

    sub_banks = _active_sub_banks(state)
    flat: dict[str, FlatBank] = {}
    children_first: list[FlatBank] = []  # the order in which fairshare_tree makes BankNodes

    def node(name: str) -> FlatBank:
        subs = [node(child) for child in sorted(sub_banks[name])]
        bank = flat[name] = FlatBank(name, state.banks[name].shares, subs)
        children_first.append(bank)
        return bank

    node(root.bank)
    for a in state.all_associations():
        if a.active:
            key = (a.username, a.bank)
            value, shares = usage[key].usage, a.shares
            # fairshare_tree checks every active association, in or out of the active tree.
            # The check's plain case inline: this runs once per association.
            if not (shares.__class__ is int and shares >= 0 and math.isfinite(value)):
                check_association(a.username, a.bank, shares, value)
            holder = flat.get(a.bank)
            if holder is not None:
                holder.user_keys.append(key)
                holder.user_shares.append(shares)
                holder.user_usages.append(value)
    for bank in children_first:
        check_bank(bank.name, bank.shares)
    return flat[root.bank]


def site_ranking(state: SiteState, usage: dict[AssocKey, AssociationUsage]) -> Ranking:
    """The algorithm in force over the site's active tree: every active association's rank
    (the weighted walk's over fairshare_tree, or Fair Tree's / classic's factors:
    slurm_ranking)."""
    if state.fairshare_algorithm != WEIGHTED_WALK:
        return slurm_ranking(state, usage, state.fairshare_algorithm)
    tree = _flat_tree(state, usage)
    return rank_flat(tree) if tree is not None else Ranking({}, 0)


def site_fairshare(
    state: SiteState, usage: dict[AssocKey, AssociationUsage]
) -> dict[AssocKey, float]:
    """The walk's fair-share of every active association."""
    return site_ranking(state, usage).fairshare()


# --- Slurm sites: continuous usage and Fair Tree / classic over the site's tree ----------------
class JobSpan(NamedTuple):
    """A recorded job as the continuous model charges it: billing per second over its run."""

    userid: int | None
    username: str | None
    bank: str | None
    billing: float
    t_run: float
    t_inactive: float


# A JobSpan's fields as a plain row: a store's million rows need not become named tuples.
JobSpanTuple = tuple[int | None, str | None, str | None, float, float, float]


class BalanceEntry(NamedTuple):
    """An opening balance's entry: raw usage (billing-seconds) of an association at `at`."""

    username: str
    bank: str
    at: float
    raw_usage: float


def decay_params(state: SiteState) -> DecayParams:
    """The continuous model's settings: the half-life, and the reset when the reset period is
    one of Slurm's names (a duration means no reset under this model: docs/semantics.md)."""
    text = state.config.get(RESET_PERIOD_KEY, "")
    reset = ResetPeriod(text) if text in tuple(ResetPeriod) else ResetPeriod.NONE
    return DecayParams(
        half_life=float(state.config["priority_decay_half_life"]),
        reset_period=reset,
        timezone=state.timezone,
    )


AnchoredSums = dict[AssocKey, dict[float, int]]
"""Per association, per anchor, the exact sum of its settled jobs' anchored terms
(ledger.continuous_usage.settled_units)."""


@dataclass
class ContinuousReading:
    """The continuous model at one moment `at`, in the parts an update carries forward:
    `settled`, the anchored sums of the jobs fully in the past; `running`, each association's
    decayed usage of the jobs that had started but not ended by `at` (they are settled later);
    `opening`, its decayed opening balance; `since`, from when each association's jobs count
    (the last reset boundary, or its latest opening balance's time: None, from the start)."""

    at: float
    half_life: float
    boundary: float | None
    since: dict[AssocKey, float | None]
    opening: dict[AssocKey, list[float]] = field(default_factory=dict)
    settled: AnchoredSums = field(default_factory=dict)
    running: dict[AssocKey, list[float]] = field(default_factory=dict)

    def usage(self, state: SiteState) -> dict[AssocKey, AssociationUsage]:
        """Every association's raw usage at `at`."""
        out = {}
        at, half_life = self.at, self.half_life
        opening, settled, running = self.opening, self.settled, self.running
        weights: dict[float, float] = {}  # each anchor's decay at `at`, shared by all
        for assoc in state.all_associations():
            key = (assoc.username, assoc.bank)
            sums = settled.get(key)
            parts = anchored_parts(sums, at, half_life, weights) if sums else []
            if key in opening:
                parts = [*opening[key], *parts]
            if key in running:
                parts += running[key]
            out[key] = AssociationUsage(math.fsum(parts), [])
        return out


def continuous_reading(
    state: SiteState, balances: Iterable[BalanceEntry], at: float
) -> ContinuousReading:
    """A reading at `at` with no job yet: the reset boundary, each association's opening
    balance decayed to `at` (gone once a reset follows it) and the time its jobs count from."""
    params = decay_params(state)
    boundary = last_reset(at, params.reset_period, params.timezone)
    reading = ContinuousReading(at, params.half_life, boundary, {})
    opened: dict[AssocKey, float] = {}
    for entry in balances:
        key = (entry.username, entry.bank)
        if entry.at > at or state.association(*key) is None:
            continue
        opened[key] = max(opened.get(key, entry.at), entry.at)
        if boundary is None or entry.at >= boundary:
            decayed = entry.raw_usage * decay_weight(at - entry.at, params.half_life)
            reading.opening.setdefault(key, []).append(decayed)
    for assoc in state.all_associations():
        key = (assoc.username, assoc.bank)
        balance = opened.get(key)
        reading.since[key] = (
            boundary if balance is None else balance if boundary is None else max(boundary, balance)
        )
    return reading


def add_jobs(
    state: SiteState,
    reading: ContinuousReading,
    jobs: Iterable[JobSpanTuple],
    resolver: AssociationResolver | None = None,
) -> set[AssocKey]:
    """Count `jobs` into `reading`: a job that ended by `at` into its association's anchored
    sums, one still running at `at` into its running parts; one not started by `at`, or that
    ended at or before its association's usage cutoff (clear-usage, a bank's
    ignore_older_than), counts nothing, as under the periods model. Only the part of a job
    after its association's `since` counts. Returns the associations whose sums grew."""
    at, half_life = reading.at, reading.half_life
    resolve = (resolver or AssociationResolver(state)).resolve
    settled, running = reading.settled, reading.running
    # Per job identity (userid, username, bank) as recorded: its association, that one's usage
    # cutoff and `since` (None: it resolves to none). Looked up once per row: a whole reading
    # goes through a million rows, and three lookups and a call per row were a tenth of it.
    targets: dict[tuple[int | None, str | None, str | None], _Target | None] = {}
    settle = Settler(half_life).settle
    grown: set[AssocKey] = set()
    for userid, username, bank, billing, t_run, t_inactive in jobs:
        identity = (userid, username, bank)
        target = targets.get(identity, _UNSEEN)
        if target is _UNSEEN:  # (get, not a KeyError: a cycle's new jobs are half misses)
            target = targets[identity] = _target(state, reading, resolve(userid, username, bank))
        if target is None or t_run >= at:
            continue
        found, cutoff, since = target
        if t_inactive <= cutoff:
            continue
        if t_inactive > at:
            running.setdefault(found, []).append(
                span_usage(billing, t_run, t_inactive, at, half_life, since)
            )
            continue
        if (
            not (0.0 <= billing < math.inf and -math.inf < t_run <= t_inactive < math.inf)
            or billing.__class__ is bool
        ):
            check_span(billing, t_run, t_inactive)  # raises what a Charge would
        start = t_run if since is None or since <= t_run else since
        anchor, units = settle(billing * 1.0, start, t_inactive)
        if units:
            sums = settled.get(found)
            if sums is None:
                sums = settled[found] = {}
            sums[anchor] = sums.get(anchor, 0) + units
            grown.add(found)
    return grown


class _Target(NamedTuple):
    """Where add_jobs counts a job identity's jobs."""

    key: AssocKey
    cutoff: float  # its jobs that ended at or before this count nothing
    since: float | None  # only their time after this counts


def _target(state: SiteState, reading: ContinuousReading, key: AssocKey | None) -> _Target | None:
    if key is None:
        return None
    assoc = state.association(*key)
    assert assoc is not None  # resolve() finds only associations that exist
    return _Target(key, state.usage_cutoff(assoc), reading.since.get(key))


def continuous_usage(
    state: SiteState, jobs: Iterable[JobSpanTuple], balances: Iterable[BalanceEntry], at: float
) -> dict[AssocKey, AssociationUsage]:
    """Every association's raw usage at `at` under the continuous model (docs/semantics.md, "The
    fair-share policy"):
    Σ billing · hl/ln2 · (2^(−(T−t_end)/hl) − 2^(−(T−t_start)/hl)) over its jobs' time after the
    last reset boundary and after its latest opening balance (which stands for all its usage
    before), plus its balances decaying from their moment (gone once a reset follows them),
    in the anchored form of ledger.continuous_usage (the jobs that ended by `at` as exact
    sums), so that an update that carries the sums forward gives the same numbers."""
    reading = continuous_reading(state, balances, at)
    add_jobs(state, reading, jobs)
    return reading.usage(state)


@dataclass(frozen=True)
class SlurmRanking(Ranking):
    """Fair Tree's or classic's outcome as update-fshare keeps it: `values` are the fair-share
    factors (Fair Tree's rank / N unrounded, classic's 2^(−UE/S/d)); `ranks` order them, best
    first, ties sharing the higher rank (classic's values are not ranks: its rank is only their
    order)."""

    values: dict[AssocKey, float] = field(default_factory=dict)

    def fairshare(self) -> dict[AssocKey, float]:
        return dict(self.values)


def slurm_tree(
    state: SiteState, usage: Mapping[AssocKey, AssociationUsage]
) -> tuple[list[SlurmAccount], list[SlurmUser], dict[tuple[str, str], AssocKey]]:
    """The site's active tree as Slurm's: the root bank is Slurm's `root`, every other active
    bank an account, every active association a user association (shares 2147483647 are
    `Fairshare=parent`). Returns the accounts, the users, and each (account, user) pair's
    association key."""
    from ledger.slurm_shares import ROOT, SlurmAccount, SlurmUser

    root = state.root_bank()
    if root is None or not root.active:
        return [], [], {}
    live = {b.bank for b in state.subtree(root.bank) if b.active and _active_path(state, b.bank)}

    def account_of(bank: str) -> str:
        return ROOT if bank == root.bank else bank

    accounts = [
        SlurmAccount(name, account_of(state.banks[name].parent_bank), state.banks[name].shares)
        for name in sorted(live)
        if name != root.bank
    ]
    users, keys = [], {}
    for assoc in state.all_associations():
        if assoc.active and assoc.bank in live:
            key = (assoc.username, assoc.bank)
            users.append(
                SlurmUser(assoc.username, account_of(assoc.bank), assoc.shares, usage[key].usage)
            )
            keys[(account_of(assoc.bank), assoc.username)] = key
    return accounts, users, keys


def _active_path(state: SiteState, bank: str) -> bool:
    """An inactive bank leaves out its whole subtree, as the weighted walk's tree does."""
    return all(state.banks[name].active for name in state.ancestors(bank) if name in state.banks)


def slurm_result(
    state: SiteState, usage: Mapping[AssocKey, AssociationUsage], algorithm: str
) -> tuple[FairTreeResult | ClassicResult, dict[tuple[str, str], AssocKey]]:
    """Fair Tree or classic (`algorithm`) over the site's active tree with `usage`: every
    association's row as sshare shows it, and the association key of each user row."""
    from ledger.classic_fairshare import compute_classic_fairshare
    from ledger.fair_tree import compute_fair_tree

    accounts, users, keys = slurm_tree(state, usage)
    if algorithm == FAIR_TREE:
        return compute_fair_tree(accounts, users), keys
    if algorithm == CLASSIC:
        return compute_classic_fairshare(accounts, users, state.dampening_factor), keys
    raise InvalidValue(f"{algorithm} is not one of Slurm's algorithms ({FAIR_TREE}, {CLASSIC})")


def slurm_ranking(
    state: SiteState, usage: Mapping[AssocKey, AssociationUsage], algorithm: str
) -> SlurmRanking:
    """slurm_result's fair-share factors per association, with their order as ranks."""
    if state.root_bank() is None:
        return SlurmRanking({}, 0, {})
    result, keys = slurm_result(state, usage, algorithm)
    values = {keys[pair]: value for pair, value in result.fair_shares().items()}
    ordered = sorted(values.values(), reverse=True)
    rank_of: dict[float, int] = {}
    for index, value in enumerate(ordered):
        rank_of.setdefault(value, len(ordered) - index)
    return SlurmRanking({k: rank_of[v] for k, v in values.items()}, len(values), values)
