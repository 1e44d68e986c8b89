"""The optimised weighted walk against a straightforward one (the walk as first written, kept
here as the oracle): the same ranks, in the same (walk) order, on random trees full of ties; and
a site's site_ranking and bank_usage against the oracle and bank_usage as first written."""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.fairshare import (
    FAIRSHARE_DECIMALS,
    BankNode,
    Ranking,
    UserLeaf,
    WeightedSibling,
    rank_associations,
    rank_siblings,
)
from ledger.site_usage import (
    AssociationUsage,
    AssocKey,
    bank_usage,
    fairshare_tree,
    site_ranking,
)
from ledger.state import Association, Bank, SiteState

# --- the oracle: ledger/fairshare.py's walk before it was optimised, unchanged in substance ---

ORACLE_ZERO_USAGE_WEIGHT = float(2**64)
ORACLE_ZERO_USAGE_EPSILON = 1e-9


def oracle_is_equal(a: float, b: float) -> bool:
    return abs(a - b) < sys.float_info.epsilon * max(abs(a), abs(b), 1.0)


def oracle_sibling_weight(
    shares: int, usage: float, total_shares: int, total_usage: float
) -> float:
    if shares == 0:
        return 0.0
    if abs(usage) < ORACLE_ZERO_USAGE_EPSILON:
        return ORACLE_ZERO_USAGE_WEIGHT
    if total_usage == 0.0:
        return 0.0
    return (float(shares) / float(total_shares)) / (usage / total_usage)


@dataclass(frozen=True)
class OracleSibling:
    member: UserLeaf | BankNode
    weight: float

    @property
    def is_user(self) -> bool:
        return isinstance(self.member, UserLeaf)


def oracle_rank_siblings(siblings: Iterable[OracleSibling]) -> list[OracleSibling]:
    def key(sibling: OracleSibling) -> tuple[float, int, str, str]:
        member = sibling.member
        if isinstance(member, UserLeaf):
            return (-sibling.weight, 0, member.username, member.bank)
        return (-sibling.weight, 1, member.name, "")

    def users_first(run: list[OracleSibling]) -> list[OracleSibling]:
        return [s for s in run if s.is_user] + [s for s in run if not s.is_user]

    ranked: list[OracleSibling] = []
    run: list[OracleSibling] = []
    for sibling in sorted(siblings, key=key):
        if run and not oracle_is_equal(run[-1].weight, sibling.weight):
            ranked.extend(users_first(run))
            run = []
        run.append(sibling)
    ranked.extend(users_first(run))
    return ranked


def oracle_iter_users(bank: BankNode) -> Iterator[UserLeaf]:
    yield from bank.users
    for child in bank.children:
        yield from oracle_iter_users(child)


class OracleWalk:
    def __init__(self, total_users: int, root: BankNode) -> None:
        self.rank = total_users
        self.stride = 0
        self.ranks: dict[tuple[str, str], int] = {}
        self.usage_by_bank: dict[str, float] = {}
        pending = [root]
        while pending:
            bank = pending.pop()
            self.usage_by_bank[bank.name] = math.fsum(u.usage for u in oracle_iter_users(bank))
            pending.extend(bank.children)

    def visit_bank(self, bank: BankNode) -> None:
        self.visit_siblings(oracle_rank_siblings(self.weigh_children(bank)))

    def weigh_children(self, bank: BankNode) -> list[OracleSibling]:
        members: list[UserLeaf | BankNode] = [*bank.users, *bank.children]
        usages = [user.usage for user in bank.users]
        usages += [self.usage_by_bank[child.name] for child in bank.children]
        total_shares = sum(member.shares for member in members)
        total_usage = math.fsum(usages)
        return [
            OracleSibling(m, oracle_sibling_weight(m.shares, u, total_shares, total_usage))
            for m, u in zip(members, usages, strict=True)
        ]

    def visit_siblings(self, ranked: list[OracleSibling]) -> None:
        tied_banks: list[BankNode] = []
        for index, sibling in enumerate(ranked):
            following = ranked[index + 1] if index + 1 < len(ranked) else None
            tied_with_next = (
                following is not None
                and following.is_user == sibling.is_user
                and oracle_is_equal(sibling.weight, following.weight)
            )
            member = sibling.member
            if isinstance(member, UserLeaf):
                self.ranks[(member.username, member.bank)] = self.rank
                if tied_with_next:
                    self.stride += 1
                else:
                    self.rank -= 1 + self.stride
                    self.stride = 0
            elif tied_with_next:
                tied_banks.append(member)
            elif tied_banks:
                tied_banks.append(member)
                merged = [ws for bank in tied_banks for ws in self.weigh_children(bank)]
                self.visit_siblings(oracle_rank_siblings(merged))
                tied_banks = []
            else:
                self.visit_bank(member)


def oracle_ranking(root: BankNode) -> Ranking:
    total_users = sum(1 for _ in oracle_iter_users(root))
    if total_users == 0:
        return Ranking({}, 0)
    walk = OracleWalk(total_users, root)
    walk.visit_bank(root)
    return Ranking(walk.ranks, total_users)


def oracle_fairshare(ranking: Ranking) -> dict[tuple[str, str], float]:
    return {
        key: round(rank / ranking.ranked_of, FAIRSHARE_DECIMALS)
        for key, rank in ranking.ranks.items()
    }


# --- random trees where every kind of tie is likely --------------------------------------------

# 0.1 + 0.2 is 0.30000000000000004: a bank holding users at 0.1 and 0.2 weighs a hair off a user
# at 0.3, so is_equal runs of users and banks that are not exactly equal come up. Negative
# usages can cancel a bank's total out to 0.
TIE_USAGES = [0.0, 1e-10, 0.1, 0.2, 0.3, 0.30000000000000004, 1.0, 2.0, 3.0, 1e6, -1.0, -0.3]
SHARES = st.sampled_from([0, 1, 1, 2, 3, 10])
USAGES = st.one_of(
    st.sampled_from(TIE_USAGES),
    st.floats(min_value=-10.0, max_value=1e9, allow_nan=False, allow_infinity=False),
)


@st.composite
def walk_trees(draw: st.DrawFn) -> BankNode:
    numbers = iter(range(1_000_000))

    def bank(depth: int) -> BankNode:
        name = f"b{next(numbers)}"
        sub_banks = draw(st.integers(0, 4)) if depth < 3 else 0
        children = tuple(bank(depth + 1) for _ in range(sub_banks))
        # A bank may hold users beside sub-banks (or nothing: an empty bank); usernames repeat
        # across banks, so tied banks merge users of the same name.
        user_count = draw(st.integers(0, 5))
        users = tuple(
            UserLeaf(f"u{i}", name, draw(SHARES), draw(USAGES)) for i in range(user_count)
        )
        return BankNode(name, draw(SHARES), children, users)

    return bank(0)


@settings(deadline=None)
@given(tree=walk_trees())
def test_walk_matches_the_oracle(tree: BankNode) -> None:
    expected = oracle_ranking(tree)
    got = rank_associations(tree)
    assert got.ranked_of == expected.ranked_of
    # Walk order is part of the result: compare the items as lists, not the dicts.
    assert list(got.ranks.items()) == list(expected.ranks.items())
    assert list(got.fairshare().items()) == list(oracle_fairshare(expected).items())


@settings(deadline=None)
@given(
    weights=st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from([0.0, 1.0, 1.0 + 2**-52, 1.0 + 2**-51, 2.0, float(2**64), 0.5, 1e-17]),
        ),
        max_size=12,
    )
)
def test_rank_siblings_matches_the_oracle(weights: list[tuple[bool, float]]) -> None:
    members: list[UserLeaf | BankNode] = [
        UserLeaf(f"u{i}", "b", 1, 1.0) if is_user else BankNode(f"b{i}", 1)
        for i, (is_user, _) in enumerate(weights)
    ]
    got = rank_siblings(WeightedSibling(m, w) for m, (_, w) in zip(members, weights, strict=True))
    expected = oracle_rank_siblings(
        OracleSibling(m, w) for m, (_, w) in zip(members, weights, strict=True)
    )
    assert [(s.member, s.weight.hex()) for s in got] == [
        (s.member, s.weight.hex()) for s in expected
    ]


# --- a site: site_ranking (which skips the BankNode tree) and bank_usage against the oracle ---


def oracle_bank_usage(
    state: SiteState, usage: dict[AssocKey, AssociationUsage]
) -> dict[str, float]:
    """bank_usage as first written: each usage appended to its bank and every ancestor."""
    totals: dict[str, list[float]] = defaultdict(list)
    for assoc in state.all_associations():
        if not assoc.active:
            continue
        value = usage[(assoc.username, assoc.bank)].usage
        for bank in [assoc.bank, *state.ancestors(assoc.bank)]:
            totals[bank].append(value)
    return {name: math.fsum(totals.get(name, [])) for name in state.banks}


@st.composite
def sites(draw: st.DrawFn) -> tuple[SiteState, dict[AssocKey, AssociationUsage]]:
    state = SiteState()
    usage: dict[AssocKey, AssociationUsage] = {}
    numbers = iter(range(1_000_000))

    def bank(parent: str, depth: int) -> None:
        number = next(numbers)
        name = f"b{number}"
        # An inactive bank leaves its subtree out of the walk, but not out of bank_usage.
        active = draw(st.integers(0, 5)) > 0
        state.banks[name] = Bank(number, name, parent, draw(SHARES), active=active)
        for i in range(draw(st.integers(0, 4))):
            username = f"u{i}"
            state.associations.setdefault(username, {})[name] = Association(
                username,
                name,
                i,
                0.0,
                0.0,
                active=draw(st.integers(0, 5)) > 0,
                shares=draw(SHARES),
            )
            usage[(username, name)] = AssociationUsage(draw(USAGES), [])
        if depth < 3:
            for _ in range(draw(st.integers(0, 3))):
                bank(name, depth + 1)

    bank("", 0)
    # The dicts' order is part of the input: shuffle it, results must not follow it.
    state.banks = dict(draw(st.permutations(list(state.banks.items()))))
    state.associations = dict(draw(st.permutations(list(state.associations.items()))))
    return state, usage


def float_bits(values: dict[Any, float]) -> list[tuple[Any, str]]:
    return [(key, value.hex()) for key, value in values.items()]


@settings(deadline=None)
@given(site=sites())
def test_site_ranking_and_bank_usage_match_the_oracle(
    site: tuple[SiteState, dict[AssocKey, AssociationUsage]],
) -> None:
    state, usage = site
    tree = fairshare_tree(state, usage)
    expected = oracle_ranking(tree) if tree is not None else Ranking({}, 0)
    got = site_ranking(state, usage)
    assert got.ranked_of == expected.ranked_of
    assert list(got.ranks.items()) == list(expected.ranks.items())
    assert float_bits(got.fairshare()) == float_bits(oracle_fairshare(expected))
    assert float_bits(bank_usage(state, usage)) == float_bits(oracle_bank_usage(state, usage))


@pytest.mark.parametrize("outside", [False, True])
def test_site_ranking_refuses_what_fairshare_tree_refuses(outside: bool) -> None:
    state = SiteState()
    state.banks = {
        "root": Bank(1, "root", "", 1),
        "a": Bank(2, "a", "root", 1, active=not outside),
    }
    state.associations = {
        "u": {"a": Association("u", "a", 1, 0.0, 0.0)},
        "v": {"root": Association("v", "root", 2, 0.0, 0.0, shares=-1)},
    }
    usage = {("u", "a"): AssociationUsage(math.inf, []), ("v", "root"): AssociationUsage(1.0, [])}
    with pytest.raises(InvalidValue) as expected:
        fairshare_tree(state, usage)
    with pytest.raises(InvalidValue) as got:
        site_ranking(state, usage)
    assert str(got.value) == str(expected.value)
