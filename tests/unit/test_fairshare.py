"""The fair-share weighted walk against flux-accounting's vectors, and its rules."""

from __future__ import annotations

import csv
import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.fairshare import (
    ZERO_USAGE_WEIGHT,
    BankNode,
    UserLeaf,
    WeightedSibling,
    bank_usage,
    compute_fairshare,
    is_equal,
    iter_users,
    rank_siblings,
    sibling_weights,
)

WEIGHTED_TREE_DIR = Path(__file__).resolve().parent.parent / "data" / "weighted_tree"

# flux's CSVs mark a bank row with this in the user column.
NO_USER = "%^+_nouser"


# --- the CSV format of flux's src/fairness/weighted_tree/test/accounts_data --------------------


@dataclass
class _DraftBank:
    name: str
    shares: int
    children: list[_DraftBank] = field(default_factory=list)
    users: list[UserLeaf] = field(default_factory=list)

    def freeze(self) -> BankNode:
        return BankNode(
            self.name,
            self.shares,
            tuple(child.freeze() for child in self.children),
            tuple(self.users),
        )


def load_weighted_tree(name: str) -> BankNode:
    """Parse `depth,bank,user,shares,usage` lines into the walk's input.

    A bank row names the bank itself; a user row names its parent bank. Depth grows by at most 1
    per line and a smaller depth closes banks. The CSV's bank usage is ignored: the walk computes
    a bank's usage from its users.
    """
    path = WEIGHTED_TREE_DIR / f"{name}.csv"
    stack: list[_DraftBank] = []  # stack[d] is the open bank at depth d
    root: _DraftBank | None = None
    with path.open(newline="") as handle:
        for line_number, row in enumerate(csv.reader(handle), start=1):
            if not row:
                continue
            depth_text, bank, user, shares_text, usage_text = row
            depth = int(depth_text)
            assert depth <= len(stack), f"{path}:{line_number}: depth jumps to {depth}"
            del stack[depth:]
            if user == NO_USER:
                draft = _DraftBank(bank, int(shares_text))
                if depth == 0:
                    assert root is None, f"{path}:{line_number}: a second root"
                    root = draft
                else:
                    stack[-1].children.append(draft)
                stack.append(draft)
            else:
                assert depth >= 1, f"{path}:{line_number}: a user at depth 0"
                parent = stack[-1]
                assert parent.name == bank, f"{path}:{line_number}: user not under bank {bank}"
                # flux parses shares and usage with stoll: they are integers in these files.
                parent.users.append(UserLeaf(user, bank, int(shares_text), float(usage_text)))
    assert root is not None, f"{path}: no root"
    return root.freeze()


def by_user(tree: BankNode, fairshare: dict[str, float]) -> dict[tuple[str, str], float]:
    """Key the expected values of a vector by (username, bank), as compute_fairshare does."""
    banks = {user.username: user.bank for user in iter_users(tree)}
    return {(username, banks[username]): value for username, value in fairshare.items()}


def with_usage(root: BankNode, username: str, usage: float) -> BankNode:
    users = tuple(
        dataclasses.replace(user, usage=usage) if user.username == username else user
        for user in root.users
    )
    children = tuple(with_usage(child, username, usage) for child in root.children)
    return dataclasses.replace(root, children=children, users=users)


# --- the vectors: exact values from running flux-accounting's C++ -------------------------------

VECTORS: dict[str, dict[str, float]] = {
    "small_no_tie": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.857143,
        "leaf.2.1": 0.714286,
        "leaf.2.2": 0.571429,
        "leaf.1.3": 0.428571,
        "leaf.1.1": 0.285714,
        "leaf.1.2": 0.142857,
    },
    "small_tie": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.875,
        "leaf.1.3": 0.75,
        "leaf.2.3": 0.75,
        "leaf.1.2": 0.5,
        "leaf.2.2": 0.5,
        "leaf.1.1": 0.5,
        "leaf.2.1": 0.5,
    },
    "small_tie_all": {
        "leaf.1.3": 1.0,
        "leaf.2.3": 1.0,
        "leaf.3.3": 1.0,
        "leaf.1.1": 0.666667,
        "leaf.1.2": 0.666667,
        "leaf.2.1": 0.666667,
        "leaf.2.2": 0.666667,
        "leaf.3.1": 0.666667,
        "leaf.3.2": 0.666667,
    },
    "small_tie_diff_type": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.833333,
        "leaf.0.1": 0.666667,
        "leaf.1.3": 0.5,
        "leaf.1.2": 0.333333,
        "leaf.1.1": 0.333333,
    },
    "small_zero_shares": {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.875,
        "leaf.2.3": 0.75,
        "leaf.1.3": 0.625,
        "leaf.1.2": 0.5,
        "leaf.1.1": 0.5,
        "leaf.2.1": 0.25,
        "leaf.2.2": 0.25,
    },
    "minimal": {},
}


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector(name: str) -> None:
    tree = load_weighted_tree(name)
    assert compute_fairshare(tree) == by_user(tree, VECTORS[name])


def test_vectors_are_all_covered() -> None:
    on_disk = {path.stem for path in WEIGHTED_TREE_DIR.glob("*.csv")}
    assert on_disk == set(VECTORS)


def test_small_no_tie_is_returned_in_walk_order() -> None:
    result = compute_fairshare(load_weighted_tree("small_no_tie"))
    assert [username for username, _ in result] == list(VECTORS["small_no_tie"])


def test_update_fshare_vector_after_usage_grows() -> None:
    # t/expected/update_fshare: leaf.2.1's usage goes from 8 to 55, account2 falls to last place.
    tree = with_usage(load_weighted_tree("small_no_tie"), "leaf.2.1", 55.0)
    expected = {
        "leaf.3.1": 1.0,
        "leaf.3.2": 0.857143,
        "leaf.1.3": 0.714286,
        "leaf.1.1": 0.571429,
        "leaf.1.2": 0.428571,
        "leaf.2.2": 0.285714,
        "leaf.2.1": 0.142857,
    }
    assert bank_usage(tree) == 180.0
    assert compute_fairshare(tree) == by_user(tree, expected)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector_does_not_depend_on_input_order(name: str) -> None:
    tree = load_weighted_tree(name)
    assert compute_fairshare(reversed_tree(tree)) == compute_fairshare(tree)


def test_bank_usage_is_the_sum_of_its_users() -> None:
    tree = load_weighted_tree("small_tie_all")
    assert bank_usage(tree) == 1332.0
    assert [bank_usage(child) for child in tree.children] == [120.0, 12.0, 1200.0]


# --- the one deliberate difference from the C++ ------------------------------------------------


def test_small_usages_are_summed_exactly_not_truncated() -> None:
    # flux sums sibling usage in a uint64, truncating at every step: 0.3 + 0.3 + 0.3 -> 0, so all
    # three would get weight 0 and tie at 1.0. We sum exactly, so the shares decide.
    bank = BankNode(
        "root",
        1,
        users=(
            UserLeaf("small", "root", 1, 0.3),
            UserLeaf("medium", "root", 2, 0.3),
            UserLeaf("large", "root", 3, 0.3),
        ),
    )
    weights = sibling_weights([1, 2, 3], [0.3, 0.3, 0.3])
    assert weights == pytest.approx([0.5, 1.0, 1.5])
    assert compute_fairshare(bank) == {
        ("large", "root"): 1.0,
        ("medium", "root"): 0.666667,
        ("small", "root"): 0.333333,
    }


# --- rules and edge cases ----------------------------------------------------------------------


def test_a_single_user_gets_one() -> None:
    root = BankNode("root", 1, users=(UserLeaf("alice", "root", 1, 42.0),))
    assert compute_fairshare(root) == {("alice", "root"): 1.0}


def test_a_single_user_under_a_bank_gets_one() -> None:
    bank = BankNode("physics", 1, users=(UserLeaf("alice", "physics", 0, 0.0),))
    assert compute_fairshare(BankNode("root", 1, children=(bank,))) == {("alice", "physics"): 1.0}


def test_zero_shares_rank_last_even_with_zero_usage() -> None:
    root = BankNode(
        "root",
        1,
        users=(
            UserLeaf("idle_no_shares", "root", 0, 0.0),
            UserLeaf("busy", "root", 1, 1000.0),
            UserLeaf("busy_no_shares", "root", 0, 5.0),
        ),
    )
    assert compute_fairshare(root) == {
        ("busy", "root"): 1.0,
        # Both zero-share users weigh 0.0 and share the higher remaining rank (2/3).
        ("busy_no_shares", "root"): 0.666667,
        ("idle_no_shares", "root"): 0.666667,
    }


def test_zero_usage_siblings_tie_whatever_their_shares() -> None:
    root = BankNode(
        "root",
        1,
        users=(
            UserLeaf("a", "root", 1, 0.0),
            UserLeaf("b", "root", 1000, 0.0),
            UserLeaf("c", "root", 1000, 1.0),
        ),
    )
    assert sibling_weights([1, 1000, 1000], [0.0, 0.0, 1.0])[:2] == [ZERO_USAGE_WEIGHT] * 2
    assert ZERO_USAGE_WEIGHT == 1.8446744073709552e19
    assert compute_fairshare(root) == {
        ("a", "root"): 1.0,
        ("b", "root"): 1.0,
        ("c", "root"): 0.333333,
    }


def test_competition_ranking_skips_the_ranks_of_a_tie() -> None:
    users = tuple(UserLeaf(name, "root", 1, 10.0) for name in "abc") + (
        UserLeaf("d", "root", 1, 20.0),
    )
    result = compute_fairshare(BankNode("root", 1, users=users))
    assert result == {
        ("a", "root"): 1.0,
        ("b", "root"): 1.0,
        ("c", "root"): 1.0,
        ("d", "root"): 0.25,
    }


def test_empty_banks_consume_no_rank() -> None:
    # An empty bank has zero usage, so it weighs 2^64 and is visited first; it must not count.
    empty = BankNode("empty", 100)
    busy = BankNode("busy", 1, users=(UserLeaf("alice", "busy", 1, 5.0),))
    result = compute_fairshare(BankNode("root", 1, children=(empty, busy)))
    assert result == {("alice", "busy"): 1.0}


def test_a_tree_without_users_gives_nothing() -> None:
    assert compute_fairshare(BankNode("root", 1, children=(BankNode("empty", 1),))) == {}


def test_tree_order_is_lexicographic() -> None:
    # The best user of a worse bank still ranks below every user of a better bank.
    good = BankNode(
        "good",
        10,
        users=(UserLeaf("heavy", "good", 1, 10.0), UserLeaf("light", "good", 1, 1.0)),
    )
    bad = BankNode("bad", 1, users=(UserLeaf("idle", "bad", 1, 0.0), UserLeaf("x", "bad", 1, 9.0)))
    result = compute_fairshare(BankNode("root", 1, children=(bad, good)))
    assert list(result) == [("light", "good"), ("heavy", "good"), ("idle", "bad"), ("x", "bad")]
    assert list(result.values()) == [1.0, 0.75, 0.5, 0.25]


def test_same_username_in_tied_banks_is_kept_apart() -> None:
    one = BankNode(
        "one", 1, users=(UserLeaf("alice", "one", 1, 3.0), UserLeaf("bob", "one", 1, 1.0))
    )
    two = BankNode(
        "two", 1, users=(UserLeaf("alice", "two", 1, 3.0), UserLeaf("bob", "two", 1, 1.0))
    )
    result = compute_fairshare(BankNode("root", 1, children=(two, one)))
    assert result == {
        ("bob", "one"): 1.0,
        ("bob", "two"): 1.0,
        ("alice", "one"): 0.5,
        ("alice", "two"): 0.5,
    }


def test_a_user_tied_with_a_bank_goes_first_without_sharing_its_rank() -> None:
    leaf = WeightedSibling(UserLeaf("u", "root", 1, 1.0), 1.0)
    # The bank's weight is a hair larger but still is_equal: the user still goes first.
    bank = WeightedSibling(BankNode("b", 1), 1.0 + 2.0**-52)
    assert is_equal(leaf.weight, bank.weight)
    assert rank_siblings([bank, leaf]) == [leaf, bank]
    clearly_better = WeightedSibling(BankNode("c", 1), 1.0 + 2.0**-50)
    assert rank_siblings([leaf, clearly_better]) == [clearly_better, leaf]


def test_is_equal_is_absolute_below_one_and_relative_above() -> None:
    assert is_equal(0.0, 1e-17)
    assert not is_equal(0.0, 1e-15)
    assert is_equal(1e6, 1e6 + 1e-10)
    assert not is_equal(1e6, 1e6 + 1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda: UserLeaf("a", "root", -1, 0.0),
        lambda: UserLeaf("a", "root", 1, float("nan")),
        lambda: UserLeaf("a", "root", 1, float("inf")),
        lambda: BankNode("root", -5),
    ],
)
def test_invalid_values_are_refused(make: object) -> None:
    with pytest.raises(InvalidValue):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    "root",
    [
        BankNode("root", 1, children=(BankNode("root", 1),)),
        BankNode("root", 1, users=(UserLeaf("a", "elsewhere", 1, 1.0),)),
        BankNode("root", 1, users=(UserLeaf("a", "root", 1, 1.0), UserLeaf("a", "root", 2, 1.0))),
    ],
)
def test_inconsistent_trees_are_refused(root: BankNode) -> None:
    with pytest.raises(InvalidValue):
        compute_fairshare(root)


# --- properties --------------------------------------------------------------------------------


def reversed_tree(root: BankNode) -> BankNode:
    return shuffled_tree(root, None)


def shuffled_tree(root: BankNode, rng: random.Random | None) -> BankNode:
    """The same tree with children given in another order (reversed when rng is None)."""
    children = [shuffled_tree(child, rng) for child in root.children]
    users = list(root.users)
    for items in (children, users):
        if rng is None:
            items.reverse()
        else:
            rng.shuffle(items)
    return dataclasses.replace(root, children=tuple(children), users=tuple(users))


# Few distinct values, so that ties (users, banks, user against bank) happen often.
SHARES = st.sampled_from([0, 1, 1, 2, 10, 100])
USAGES = st.one_of(
    st.sampled_from([0.0, 0.3, 1.0, 2.0, 10.0, 1e-10]),
    st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False),
)


@st.composite
def bank_trees(draw: st.DrawFn) -> BankNode:
    bank_numbers = iter(range(1_000_000))

    def bank(depth: int) -> BankNode:
        name = f"bank{next(bank_numbers)}"
        sub_banks = draw(st.integers(0, 3)) if depth < 3 else 0
        children = tuple(bank(depth + 1) for _ in range(sub_banks))
        # Usernames repeat across banks, as one user may be in several banks.
        user_count = draw(st.integers(0, 4 if not children else 1))
        users = tuple(
            UserLeaf(f"user{i}", name, draw(SHARES), draw(USAGES)) for i in range(user_count)
        )
        return BankNode(name, draw(SHARES), children, users)

    return bank(0)


@settings(deadline=None)
@given(tree=bank_trees(), seed=st.integers(0, 2**32 - 1))
def test_fairshare_properties(tree: BankNode, seed: int) -> None:
    result = compute_fairshare(tree)
    users = list(iter_users(tree))
    assert set(result) == {(user.username, user.bank) for user in users}
    if not users:
        assert result == {}
        return
    assert all(0.0 < value <= 1.0 for value in result.values())
    assert max(result.values()) == 1.0
    # The worst rank is still >= 1, so no value is below 1/N (rounded as flux stores it).
    assert min(result.values()) >= round(1 / len(users), 6)
    assert compute_fairshare(shuffled_tree(tree, random.Random(seed))) == result
    assert compute_fairshare(reversed_tree(tree)) == result
