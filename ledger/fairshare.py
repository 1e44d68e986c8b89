"""Fair-share: flux-accounting's "weighted walk" over the bank tree, as a pure function.

This reproduces `flux account-update-fshare` (flux-accounting's `src/fairness/**`, see
`docs/semantics.md`) with one deliberate difference, explained at `sibling_weights`.

The walk, in short:

* Every bank and association is weighed against its siblings (the other children of the same
  parent, users and banks together): weight = (shares / Σ shares) / (usage / Σ usage).
* Siblings are visited in descending weight order, depth first, so the result is a lexicographic
  priority order: every user of a better bank ranks above every user of a worse one.
* The k-th user visited gets rank N - k + 1, and fair-share = rank / N, where N is the number of
  users in the whole tree (not the number of siblings, whatever flux's documentation says).
  The best user gets exactly 1.0.
* Users whose weights are equal share the higher rank, and the next user starts as many ranks
  lower as there were tied users (competition ranking: 1.0, 1.0, then (N - 2) / N).
* Banks whose weights are equal are merged into one virtual bank: their children keep the weights
  they have against their own siblings and are then ranked together, so tied users across those
  banks share a rank.
* A user and a bank with equal weights are not tied: the user goes first and takes its own rank.
* An empty bank consumes no rank.
* Values are rounded to 6 decimals because flux stores `std::to_string(double)` (printf `%f`).

Only active banks and associations may be passed in: the caller leaves inactive associations out
(they keep their previous fair-share and are not counted in N), and leaves an inactive bank out
together with its whole subtree. A bank's usage is not an input: it is the sum of the usage of the
users below it, computed here.

Everything here is deterministic: the result never depends on the order in which children are
given (flux uses the unstable `std::sort`; we sort stably and break the last ties by name).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ledger.errors import InvalidValue

# flux gives a zero-usage sibling the weight `(double)UINT64_MAX + 1.0`, so it outranks any sibling
# that has used something, whatever the shares (unless its own shares are 0).
ZERO_USAGE_WEIGHT: float = float(2**64)

# flux treats |usage| below this as "no usage" (`weighted_tree.cpp`).
ZERO_USAGE_EPSILON: float = 1e-9

# `std::to_string(double)` is printf `%f`: six decimals, which is what the database kept.
FAIRSHARE_DECIMALS: int = 6


@dataclass(frozen=True)
class UserLeaf:
    """An active association (username, bank) with its shares and its current (decayed) usage."""

    username: str
    bank: str
    shares: int
    usage: float

    def __post_init__(self) -> None:
        check_association(self.username, self.bank, self.shares, self.usage)


def check_association(username: str, bank: str, shares: int, usage: float) -> None:
    """What a UserLeaf requires of an association: raises InvalidValue otherwise."""
    _check_shares(shares, f"association ({username}, {bank})")
    # NaN or infinity would make the order of siblings meaningless (and order-dependent).
    if not math.isfinite(usage):
        raise InvalidValue(
            f"usage of association ({username}, {bank}) must be finite, got {usage!r}"
        )


@dataclass(frozen=True)
class BankNode:
    """An active bank with its active sub-banks and its active associations.

    The ledger keeps sub-banks and associations apart, but the walk allows a bank to have both
    (flux's test vector `small_tie_diff_type` has a user directly under the root, next to banks).
    """

    name: str
    shares: int
    children: tuple[BankNode, ...] = ()
    users: tuple[UserLeaf, ...] = ()

    def __post_init__(self) -> None:
        check_bank(self.name, self.shares)


@dataclass(eq=False)
class FlatBank:
    """A bank as the walk reads it: its associations as parallel lists rather than UserLeaf
    objects, which a large site would build by the ten thousand on every update only for the
    walk to take them apart. rank_associations makes these of a BankNode tree; a caller that
    holds the tree in another form (the site's state) builds them directly and then answers
    for what BankNode, UserLeaf and rank_associations check of a tree: valid shares and usages
    (check_bank, check_association), bank names unique, the user keys' bank the holder's name,
    no username twice in a bank.
    """

    name: str
    shares: int
    sub_banks: list[FlatBank] = field(default_factory=list)
    user_keys: list[tuple[str, str]] = field(default_factory=list)  # (username, bank)
    user_shares: list[int] = field(default_factory=list)
    user_usages: list[float] = field(default_factory=list)


def check_bank(name: str, shares: int) -> None:
    """What a BankNode requires of a bank: raises InvalidValue otherwise."""
    _check_shares(shares, f"bank {name}")


Sibling = UserLeaf | BankNode
"""A child of a bank: an association or a sub-bank. Both are weighed against each other."""


@dataclass(frozen=True)
class WeightedSibling:
    """A bank's child with its weight against its own siblings."""

    member: Sibling
    weight: float

    @property
    def is_user(self) -> bool:
        return isinstance(self.member, UserLeaf)


def is_equal(a: float, b: float) -> bool:
    """flux's float tie test: an absolute epsilon below 1, a relative one above."""
    return abs(a - b) < sys.float_info.epsilon * max(abs(a), abs(b), 1.0)


def sibling_weight(shares: int, usage: float, total_shares: int, total_usage: float) -> float:
    """The weight of one sibling, given the sums of shares and usage over all its siblings."""
    if shares == 0:
        # Checked first: a zero-share sibling ranks last even if it has used nothing.
        return 0.0
    if abs(usage) < ZERO_USAGE_EPSILON:
        return ZERO_USAGE_WEIGHT
    if total_usage == 0.0:
        # Only reachable when usages cancel out. flux computes usage / 0.0 = ±inf, and then
        # x / inf = 0; Python would raise instead.
        return 0.0
    # float() on both sides, as the C++ converts shares (uint64) to double before dividing.
    return (float(shares) / float(total_shares)) / (usage / total_usage)


def sibling_weights(shares: Sequence[int], usages: Sequence[float]) -> list[float]:
    """The weight of each sibling against the others: (shares / Σ shares) / (usage / Σ usage).

    The one deliberate difference from flux: Σ usage is the exact float sum. flux accumulates it
    in a uint64 and truncates at every step, so siblings whose usage adds up to less than 1 get
    Σ usage = 0 and all tie at weight 0 (three users at 0.3 each all get 1.0, whatever their
    shares). `math.fsum` is also correctly rounded, so the sum does not depend on sibling order.
    """
    if len(shares) != len(usages):
        raise ValueError(f"{len(shares)} shares for {len(usages)} usages")
    total_shares = sum(shares)
    total_usage = math.fsum(usages)
    if total_usage == 0.0:
        return [
            sibling_weight(share, usage, total_shares, total_usage)
            for share, usage in zip(shares, usages, strict=True)
        ]
    # sibling_weight's last case worked out inline (this runs once per association), the
    # others left to it.
    denominator = float(total_shares)
    return [
        (float(share) / denominator) / (usage / total_usage)
        if share != 0 and not -ZERO_USAGE_EPSILON < usage < ZERO_USAGE_EPSILON
        else sibling_weight(share, usage, total_shares, total_usage)
        for share, usage in zip(shares, usages, strict=True)
    ]


def rank_siblings(siblings: Iterable[WeightedSibling]) -> list[WeightedSibling]:
    """Siblings in the order the walk visits them: descending weight, users first on a tie.

    flux sorts with a comparator that puts a user before a bank when their weights are
    `is_equal`, even if the bank's weight is a hair larger. That comparator is not a strict weak
    ordering and `std::sort` is unstable, so we build the same order deterministically: sort by
    exact weight (then users first, then by name, so the input order never matters), cut the
    result into runs of neighbours that are `is_equal`, and move the users of each run ahead of
    its banks.
    """
    # Sorted by the key alone: two siblings given with the same name must not be compared.
    entries = sorted((_entry(sibling) for sibling in siblings), key=_sort_key)
    ranked, _ = _walk_order(entries)
    return [entry[4] for entry in ranked]


def iter_users(bank: BankNode) -> Iterator[UserLeaf]:
    """Every association in the bank's subtree."""
    yield from bank.users
    for child in bank.children:
        yield from iter_users(child)


def bank_usage(bank: BankNode) -> float:
    """The usage of a bank: the exact sum of its users' usage, over its whole subtree."""
    return math.fsum(user.usage for user in iter_users(bank))


@dataclass(frozen=True)
class Ranking:
    """The walk's outcome: each association's rank, in walk order (best first), out of N.

    The rank counts down from N (the best) and tied associations share the higher one; the
    fair-share is rank / N rounded as flux stores it. Kept as ranks because rounding can merge
    two ranks of a large site into one value: a rank read back from the value would be wrong.
    """

    ranks: dict[tuple[str, str], int]
    ranked_of: int  # N: every association of the tree

    def fairshare(self) -> dict[tuple[str, str], float]:
        """Each association's fair-share, in walk order: worked out once per ranking (an
        update asks for it twice, for the columns and for the checkpoint), so the caller
        must not change it."""
        made = self.__dict__.get("_fairshare")
        if made is None:
            ranked_of = self.ranked_of
            # fairshare_of_rank inlined: this runs once per association.
            made = {
                key: round(rank / ranked_of, FAIRSHARE_DECIMALS) for key, rank in self.ranks.items()
            }
            object.__setattr__(self, "_fairshare", made)  # frozen: set past its guard
        return made


def fairshare_of_rank(rank: int, ranked_of: int) -> float:
    """rank / N, rounded to the six decimals flux keeps."""
    return round(rank / ranked_of, FAIRSHARE_DECIMALS)


def rank_associations(root: BankNode) -> Ranking:
    """Walk the tree: every association's rank (see the module's docstring).

    A tree without users gives no ranks. Raises InvalidValue if a bank name appears twice, if
    a user's `bank` is not the bank that holds it, or if a bank holds the same username twice.
    """
    _check_tree(root)
    return rank_flat(_flattened(root))


def rank_flat(root: FlatBank) -> Ranking:
    """rank_associations of the tree in flat form (see FlatBank for what it takes as given)."""
    usage_by_bank: dict[str, float] = {}
    total_users = _subtree_usages(root, usage_by_bank)
    if total_users == 0:
        return Ranking({}, 0)
    walk = _WeightedWalk(total_users, usage_by_bank)
    walk.visit_bank(root)
    return Ranking(walk.ranks, total_users)


def compute_fairshare(root: BankNode) -> dict[tuple[str, str], float]:
    """The fair-share of every association in the tree, keyed by (username, bank).

    The mapping is in walk order (best first). A tree without users gives an empty mapping.
    Raises InvalidValue as rank_associations does.
    """
    return rank_associations(root).fairshare()


_Member = TypeVar("_Member")
# A sibling as the walk sorts and visits it: its sort key (-weight, 0 for a user or 1 for a
# bank, name, bank's name or "") and then itself. One plain tuple rather than a WeightedSibling
# and its key: a large site builds one per association on every update. The key's names are
# unique among the siblings ranked together, so sorting the tuples never compares two siblings.
_Entry = tuple[float, int, str, str, _Member]
# The walk's own: a user is its (username, bank), a bank its FlatBank.
_WalkEntry = _Entry["tuple[str, str] | FlatBank"]

_EPSILON: float = sys.float_info.epsilon


def _entry(sibling: WeightedSibling) -> _Entry[WeightedSibling]:
    """The sort key: descending weight, users first on an exact tie, then by name, so that the
    order never depends on the input's (names are unique among the siblings ranked together)."""
    member = sibling.member
    if isinstance(member, UserLeaf):
        return (-sibling.weight, 0, member.username, member.bank, sibling)
    return (-sibling.weight, 1, member.name, "", sibling)


def _sort_key(entry: _Entry[_Member]) -> tuple[float, int, str, str]:
    return entry[:4]


def _walk_order(entries: list[_Entry[_Member]]) -> tuple[list[_Entry[_Member]], list[bool]]:
    """rank_siblings' order of `entries` (given sorted), and for each entry whether its
    weight `is_equal`s the next one's in that order (False for the last)."""
    equal_next = _equal_neighbours(entries)
    kinds = {entry[1] for entry in entries}
    if len(kinds) < 2:
        # Only users or only banks: moving users ahead within a run changes nothing.
        return entries, equal_next
    ranked: list[_Entry[_Member]] = []
    run: list[_Entry[_Member]] = []
    for entry, equal in zip(entries, equal_next, strict=True):
        run.append(entry)
        if not equal:
            ranked += [e for e in run if e[1] == 0]
            ranked += [e for e in run if e[1] != 0]
            run = []
    return ranked, _equal_neighbours(ranked)


def _equal_neighbours(entries: list[_Entry[_Member]]) -> list[bool]:
    """Whether each entry's weight `is_equal`s the next one's (False for the last)."""
    # The negated weights: is_equal gives the same answer on them (negation is exact).
    weights = [entry[0] for entry in entries]
    # is_equal inlined: this runs once per association.
    equal = [
        abs(a - b) < _EPSILON * max(abs(a), abs(b), 1.0)
        for a, b in zip(weights, weights[1:], strict=False)
    ]
    if weights:
        equal.append(False)
    return equal


class _WeightedWalk:
    """One run of the walk: the rank counts down from N as users are visited."""

    def __init__(self, total_users: int, usage_by_bank: dict[str, float]) -> None:
        self.usage_by_bank = usage_by_bank
        self.rank = total_users
        # How many users before the current one share its rank (they are tied with it).
        self.stride = 0
        self.ranks: dict[tuple[str, str], int] = {}

    def visit_bank(self, bank: FlatBank) -> None:
        self.visit_siblings(self.weigh_children(bank), bool(bank.sub_banks))

    def weigh_children(self, bank: FlatBank) -> list[_WalkEntry]:
        subs = bank.sub_banks
        usage_by_bank = self.usage_by_bank
        weights = sibling_weights(
            bank.user_shares + [sub.shares for sub in subs],
            bank.user_usages + [usage_by_bank[sub.name] for sub in subs],
        )
        entries: list[_WalkEntry] = [
            (-w, 0, key[0], key[1], key) for key, w in zip(bank.user_keys, weights, strict=False)
        ]
        entries += [
            (-w, 1, sub.name, "", sub)
            for sub, w in zip(subs, weights[len(bank.user_keys) :], strict=True)
        ]
        return entries

    def visit_siblings(self, entries: list[_WalkEntry], with_banks: bool) -> None:
        """Visit siblings in walk order (`with_banks`: some are banks); none (an empty bank)
        consumes no rank."""
        entries.sort()
        ranked, equal_next = _walk_order(entries)
        ranks = self.ranks
        if not with_banks:
            # Only users (a bank without sub-banks: most of them): every tie is of one kind.
            rank, stride = self.rank, self.stride
            # Every member is a (username, bank) here; typing.cast would cost a call each.
            user_ranks: dict[Any, int] = ranks
            for (_, _, _, _, key), tied_with_next in zip(ranked, equal_next, strict=True):
                user_ranks[key] = rank
                if tied_with_next:
                    stride += 1
                else:
                    rank -= 1 + stride
                    stride = 0
            self.rank, self.stride = rank, stride
            return
        tied_banks: list[FlatBank] = []
        for index, (_, kind, _, _, member) in enumerate(ranked):
            # A tie needs the same kind: a user and a bank with equal weights are not tied,
            # the user simply went first. (The last entry is never equal to a next one.)
            tied_with_next = equal_next[index] and ranked[index + 1][1] == kind
            if not isinstance(member, FlatBank):
                ranks[member] = self.rank
                if tied_with_next:
                    self.stride += 1
                else:
                    # Competition ranking: the next user starts below every user of this tie.
                    self.rank -= 1 + self.stride
                    self.stride = 0
            elif tied_with_next:
                tied_banks.append(member)
            elif tied_banks:
                # The last bank of a tied run: visit the run as one virtual bank whose children
                # keep the weights they have against their own siblings.
                tied_banks.append(member)
                self.visit_siblings(
                    [e for bank in tied_banks for e in self.weigh_children(bank)],
                    any(bank.sub_banks for bank in tied_banks),
                )
                tied_banks = []
            else:
                self.visit_bank(member)


def _check_shares(shares: int, what: str) -> None:
    if isinstance(shares, bool) or not isinstance(shares, int) or shares < 0:
        raise InvalidValue(f"shares of {what} must be an integer >= 0, got {shares!r}")


def _check_tree(root: BankNode) -> None:
    """Bank names and (username, bank) must be unique: they identify results and break ties."""
    seen_banks: set[str] = set()
    pending = [root]
    while pending:
        bank = pending.pop()
        if bank.name in seen_banks:
            raise InvalidValue(f"bank {bank.name} appears twice in the tree")
        seen_banks.add(bank.name)
        usernames: set[str] = set()
        for user in bank.users:
            if user.bank != bank.name:
                raise InvalidValue(
                    f"association ({user.username}, {user.bank}) is held by bank {bank.name}"
                )
            if user.username in usernames:
                raise InvalidValue(f"association ({user.username}, {bank.name}) appears twice")
            usernames.add(user.username)
        pending.extend(bank.children)


def _flattened(bank: BankNode) -> FlatBank:
    """The tree as FlatBanks (its shares and usages were checked when it was built)."""
    return FlatBank(
        bank.name,
        bank.shares,
        [_flattened(child) for child in bank.children],
        [(user.username, user.bank) for user in bank.users],
        [user.shares for user in bank.users],
        [user.usage for user in bank.users],
    )


def _subtree_usages(root: FlatBank, usages: dict[str, float]) -> int:
    """Fill `usages` with `bank_usage` of every bank, in one pass over the tree; returns the
    number of users in the tree."""

    def collect(bank: FlatBank) -> list[float]:
        below = list(bank.user_usages)
        for sub in bank.sub_banks:
            below += collect(sub)
        # The fsum of all of the subtree's usages, not of the sub-banks' sums: those are
        # rounded, and a sum of them could differ in the last bit.
        usages[bank.name] = math.fsum(below)
        return below

    return len(collect(root))
