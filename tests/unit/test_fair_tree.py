"""Fair Tree (`ledger.fair_tree`) against Slurm's test24.4 and against each trap of its code.

The vector gives sshare's printed values (`%f`), so rows are compared as the exact strings sshare
would print: no tolerance.
"""

from __future__ import annotations

import functools
import random
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.fair_tree import (
    LONG_DOUBLE_IS_X87,
    FairTreeRow,
    compute_fair_tree,
    sibling_order,
)
from ledger.slurm_shares import PARENT, ROOT, SlurmAccount, SlurmUser, build_tree
from tests.unit.fair_tree_oracle import oracle_rows, oracle_tree
from tests.unit.slurm_vectors import expected_fields, load_vector

needs_x87 = pytest.mark.skipif(
    not LONG_DOUBLE_IS_X87, reason="numpy.longdouble is not the 80-bit x87 type here"
)

FAIR_TREE_COLUMNS = 9  # Account .. LevelFS

VECTOR_24_4 = load_vector("test24_4")


def acct(name: str, parent: str = ROOT, shares: int = 1) -> SlurmAccount:
    return SlurmAccount(name, parent, shares)


def user(name: str, account: str = ROOT, shares: int = 1, usage: float = 0.0) -> SlurmUser:
    return SlurmUser(name, account, shares, usage)


def fair_shares(accounts: list[SlurmAccount], users: list[SlurmUser]) -> dict[str, float]:
    result = compute_fair_tree(accounts, users)
    return {row.user: row.fair_share for row in result.rows if row.user and row.fair_share}


# --- Slurm's vector -------------------------------------------------------------------------


@needs_x87
@pytest.mark.parametrize("index", range(len(VECTOR_24_4.expected)))
def test_test24_4_row(index: int) -> None:
    """Every row of test24.4, in sshare's order, field for field as printed."""
    result = compute_fair_tree(VECTOR_24_4.accounts, VECTOR_24_4.users)
    assert len(result.rows) == len(VECTOR_24_4.expected) == 35
    expected = VECTOR_24_4.expected[index]
    assert result.rows[index].sshare_fields() == expected_fields(expected, FAIR_TREE_COLUMNS)
    assert expected.startswith(result.rows[index].sshare_line())


def test_test24_4_counts_every_user_association() -> None:
    result = compute_fair_tree(VECTOR_24_4.accounts, VECTOR_24_4.users)
    assert result.user_count == 21
    # uD2 and uD3 are both 22/17 in exact arithmetic; Slurm's floats put uD3 strictly ahead.
    assert result.user("aD", "uD3").level_fs > result.user("aD", "uD2").level_fs  # type: ignore[operator]
    assert Fraction(40, 170) / Fraction(20, 110) == Fraction(50, 170) / Fraction(25, 110)


# --- tied sibling accounts: visited in turn, never merged ----------------------------------


def tied_accounts(first: str, second: str) -> tuple[list[SlurmAccount], list[SlurmUser]]:
    """§1.3's example: two accounts with LevelFS 1.0 each; `first` holds a1 (30) and a2 (10),
    `second` holds b1 (20) and b2 (20)."""
    accounts = [acct(first), acct(second)]
    users = [
        user("a1", first, usage=30),
        user("a2", first, usage=10),
        user("b1", second, usage=20),
        user("b2", second, usage=20),
    ]
    return accounts, users


def test_tied_accounts_are_not_merged_and_the_later_one_continues_the_rank() -> None:
    result = compute_fair_tree(*tied_accounts("A", "B"))
    assert result.account("A").level_fs == result.account("B").level_fs == 1
    assert {k[1]: v for k, v in result.fair_shares().items()} == {
        "a2": 1.0,
        "a1": 0.75,
        # B's first user inherits a1's rank: B was tied with A.
        "b1": 0.75,
        "b2": 0.75,
    }
    # The documented merge would give a1 0.25 (a2, b1, b2 ahead of it): not what Slurm does.
    assert result.user("A", "a1").fair_share != 0.25


def test_tied_accounts_are_visited_in_name_order() -> None:
    # Same tree with the names swapped: the account holding b1/b2 is now visited first.
    result = compute_fair_tree(*tied_accounts("B", "A"))
    assert {k[1]: v for k, v in result.fair_shares().items()} == {
        "b1": 1.0,
        "b2": 1.0,
        "a2": 1.0,
        "a1": 0.25,
    }


def test_tied_account_order_is_lineage_byte_order() -> None:
    # Lineage `/a-b/` sorts before `/a/` ('-' < '/'), although the name "a" < "a-b".
    accounts, users = tied_accounts("a-b", "a")
    assert fair_shares(accounts, users) == {"a2": 1.0, "a1": 0.75, "b1": 0.75, "b2": 0.75}


def test_all_idle_users_do_not_all_get_one() -> None:
    """Zero-share accounts tie at LevelFS 0; the second one's idle user inherits a low rank."""
    accounts = [acct("A", shares=0), acct("B", shares=0)]
    users = [
        user("u"),
        user("a1", "A"),
        user("a2", "A", shares=0),
        user("b1", "B"),
        user("b2", "B"),
    ]
    result = compute_fair_tree(accounts, users)
    assert {k[1]: v for k, v in result.fair_shares().items()} == {
        "u": 1.0,
        "a1": 0.8,
        "a2": 0.6,
        "b1": 0.6,  # LevelFS inf, idle, and still 0.6
        "b2": 0.6,
    }
    assert result.user("B", "b1").level_fs == np.inf


def test_a_user_tied_with_a_sibling_account_shares_its_first_users_rank() -> None:
    # u (LevelFS 1) and account S (LevelFS 1) under A; S's best user takes u's rank.
    accounts = [acct("A"), acct("S", "A")]
    users = [
        user("u", "A", usage=10),
        user("s1", "S", usage=2),
        user("s2", "S", usage=8),
        user("x", ROOT, usage=1000),
    ]
    result = compute_fair_tree(accounts, users)
    assert result.user("A", "u").level_fs == result.account("S").level_fs == 1
    shares = {k[1]: v for k, v in result.fair_shares().items()}
    assert shares == {"u": 1.0, "s1": 1.0, "s2": 0.5, "x": 0.25}


# --- long double ----------------------------------------------------------------------------


def double_level_fs(shares: int, level_shares: int, usage: float, parent_usage: float) -> float:
    """LevelFS as a plain-float implementation would compute it."""
    return (shares / level_shares) / (usage / parent_usage)


@needs_x87
def test_a_near_tie_is_ordered_by_long_double_not_by_double() -> None:
    # x and y are exactly tied in real numbers: (1/4)/(3/14) == (3/4)/(9/14) == 7/6.
    users = [
        user("x", shares=1, usage=3),
        user("y", shares=3, usage=9),
        user("z", shares=0, usage=2),
    ]
    result = compute_fair_tree([], users)
    x, y = result.user(ROOT, "x"), result.user(ROOT, "y")
    assert x.level_fs is not None and y.level_fs is not None
    assert x.level_fs < y.level_fs  # long double: y ahead
    assert (y.fair_share, x.fair_share) == (1.0, pytest.approx(2 / 3))
    # In doubles the order is the other way round, so x would get 1.0.
    assert double_level_fs(1, 4, 3, 14) > double_level_fs(3, 4, 9, 14)


@needs_x87
def test_a_tie_in_double_is_no_tie_in_long_double() -> None:
    users = [user("x", shares=1, usage=1), user("y", shares=9, usage=9)]
    result = compute_fair_tree([], users)
    assert double_level_fs(1, 10, 1, 10) == double_level_fs(9, 10, 9, 10) == 1.0
    assert result.user(ROOT, "x").fair_share == 1.0
    assert result.user(ROOT, "y").fair_share == 0.5  # a double implementation ties it at 1.0


# --- Fairshare=parent -----------------------------------------------------------------------


def test_parent_account_children_compete_with_its_siblings() -> None:
    accounts = [acct("P", shares=PARENT), acct("Q", shares=10)]
    users = [
        user("p1", "P", shares=10, usage=10),
        user("p2", "P", shares=10, usage=30),
        user("q1", "Q", shares=1, usage=20),
    ]
    tree = build_tree(accounts, users)
    by_key = {a.key: a for a in tree.associations}
    root = tree.root
    assert [a.key for a in root.fs_children] == [("P", None), ("P", "p1"), ("P", "p2"), ("Q", None)]
    assert by_key[("P", None)].fs_children == []
    assert by_key[("P", "p1")].level_shares == 30  # P adds 0, p1 10, p2 10, Q 10
    result = compute_fair_tree(accounts, users)
    p1 = result.user("P", "p1")
    assert p1.norm_shares == pytest.approx(1 / 3)
    assert p1.effective_usage == pytest.approx(10 / 60)  # usage / root's usage
    p_row = result.account("P")
    assert p_row.level_fs is None and p_row.sshare_fields()[8] == ""
    assert p_row.raw_usage == 40  # usage still sums along the real tree
    assert result.fair_shares() == {("P", "p1"): 1.0, ("Q", "q1"): 2 / 3, ("P", "p2"): 1 / 3}


def test_nested_parent_accounts_flatten_to_the_first_real_ancestor() -> None:
    accounts = [
        acct("A", shares=10),
        acct("B", "A", PARENT),
        acct("C", "B", PARENT),
        acct("D", "B", 7),
    ]
    users = [user("c1", "C", shares=5, usage=1), user("d1", "D", usage=1), user("a1", "A", 3, 1)]
    tree = build_tree(accounts, users)
    by_key = {a.key: a for a in tree.associations}
    a = by_key[("A", None)]
    assert {x.key for x in a.fs_children} == {
        ("B", None),
        ("C", None),
        ("C", "c1"),
        ("D", None),
        ("A", "a1"),
    }
    assert by_key[("C", "c1")].level_shares == 5 + 7 + 3
    result = compute_fair_tree(accounts, users)
    assert result.user("C", "c1").norm_shares == pytest.approx(5 / 15)


def test_parent_user_ranks_first_and_shows_its_fs_parents_shares() -> None:
    accounts = [acct("A", shares=4), acct("B", shares=1)]
    users = [
        user("heavy", "A", shares=PARENT, usage=1000),
        user("light", "A", shares=1, usage=0),
        user("b", "B", usage=1),
    ]
    result = compute_fair_tree(accounts, users)
    heavy = result.user("A", "heavy")
    assert heavy.level_fs == np.inf
    assert heavy.norm_shares == result.account("A").norm_shares == 0.8
    assert heavy.sshare_fields()[2] == "parent" and heavy.sshare_fields()[8] == ""
    # B (LevelFS 200.2) goes first; inside A, `heavy` ties at inf with the idle `light`
    assert result.user("B", "b").fair_share == 1.0
    assert heavy.fair_share == result.user("A", "light").fair_share == 2 / 3


# --- edges ----------------------------------------------------------------------------------


def test_zero_usage_everywhere() -> None:
    result = compute_fair_tree([acct("A")], [user("a", "A"), user("b", "A"), user("r")])
    assert all(row.raw_usage == 0 for row in result.rows)
    assert all(row.norm_usage in (None, 0.0) for row in result.rows)
    assert result.account("A").effective_usage == 0.0
    assert set(result.fair_shares().values()) == {1.0}


def test_zero_shares_give_level_fs_zero_even_without_usage() -> None:
    result = compute_fair_tree([], [user("idle0", shares=0), user("busy", usage=5)])
    assert result.user(ROOT, "idle0").level_fs == 0
    assert result.user(ROOT, "busy").fair_share == 1.0
    assert result.user(ROOT, "idle0").fair_share == 0.5


def test_an_empty_account_takes_no_rank() -> None:
    result = compute_fair_tree([acct("empty", shares=100), acct("A")], [user("a", "A", usage=1)])
    assert result.user_count == 1
    assert result.fair_shares() == {("A", "a"): 1.0}
    assert result.account("empty").level_fs == np.inf
    assert result.account("empty").fair_share is None


def test_users_under_root_and_beside_sub_accounts() -> None:
    accounts = [acct("A", shares=2), acct("A1", "A", 1)]
    users = [user("r", ROOT, 1, 10), user("a", "A", 1, 10), user("a1", "A1", 1, 10)]
    result = compute_fair_tree(accounts, users)
    assert [r.sshare_line() for r in result.rows] == [
        "root|||0.000000|30||1.000000|||",
        "root|r|1|0.333333|10|0.333333|0.333333|1.000000|1.000000|",
        "A||2|0.666667|20|0.666667|0.666667||1.000000|",
        "A|a|1|0.500000|10|0.333333|0.500000|1.000000|1.000000|",
        "A1||1|0.500000|10|0.333333|0.500000||1.000000|",
        "A1|a1|1|1.000000|10|0.333333|1.000000|1.000000|1.000000|",
    ]
    # r and A tie: both are a double third (two thirds) over a long double one, just below 1;
    # r ranks first, A (tied) passes r's rank on to a, and A1 (tied with a) on to a1.
    assert result.user(ROOT, "r").level_fs == result.account("A").level_fs < 1


def test_level_shares_wrap_like_a_uint32() -> None:
    big = PARENT - 1
    users = [user(f"u{i}", shares=big, usage=1) for i in range(3)]
    row = compute_fair_tree([], users).user(ROOT, "u0")
    assert row.norm_shares == big / ((3 * big) % 2**32)


def test_malformed_trees_are_refused() -> None:
    with pytest.raises(InvalidValue):
        compute_fair_tree([acct("A", "B"), acct("B", "A")], [])
    with pytest.raises(InvalidValue):
        compute_fair_tree([acct("A", "nowhere")], [])
    with pytest.raises(InvalidValue):
        compute_fair_tree([], [user("u", "A")])
    with pytest.raises(InvalidValue):
        compute_fair_tree([], [user("u"), user("u")])
    with pytest.raises(InvalidValue):
        SlurmUser("u", ROOT, 1, float("nan"))
    with pytest.raises(InvalidValue):
        SlurmAccount("A", ROOT, PARENT + 1)


# --- invariants -----------------------------------------------------------------------------

SHARES = st.one_of(st.integers(0, 50), st.just(PARENT))
USAGE = st.one_of(st.just(0.0), st.integers(0, 100).map(float), st.floats(0, 1e6))


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[SlurmAccount], list[SlurmUser]]:
    count = draw(st.integers(0, 6))
    accounts: list[SlurmAccount] = []
    for i in range(count):
        parent = draw(st.sampled_from([ROOT] + [a.name for a in accounts]))
        accounts.append(SlurmAccount(f"a{i}", parent, draw(SHARES)))
    holders = [ROOT] + [a.name for a in accounts]
    users = [
        SlurmUser(f"u{i}", draw(st.sampled_from(holders)), draw(SHARES), draw(USAGE))
        for i in range(draw(st.integers(1, 10)))
    ]
    return accounts, users


@settings(deadline=None)
@given(trees(), st.randoms(use_true_random=False))
def test_fair_tree_invariants(
    tree: tuple[list[SlurmAccount], list[SlurmUser]], rnd: random.Random
) -> None:
    accounts, users = tree
    result = compute_fair_tree(accounts, users)
    n = result.user_count
    user_rows = [row for row in result.rows if row.is_user]
    assert n == len(users) == len(user_rows)
    ranks = [row.rank for row in user_rows]
    assert all(rank is not None and 1 <= rank <= n for rank in ranks)
    # fair-share = k / N, in (0, 1]; somebody is first
    for row in user_rows:
        assert row.fair_share == row.rank / n  # type: ignore[operator]
        assert 0 < row.fair_share <= 1  # type: ignore[operator]
    assert max(ranks) == n  # type: ignore[type-var]
    # competition ranking: exactly N - r users rank above a user of rank r
    for rank in ranks:
        assert sum(1 for other in ranks if other > rank) == n - rank  # type: ignore[operator]
    # without any tie the ranks are a permutation of 1..N
    if len(set(ranks)) == n:
        assert sorted(ranks) == list(range(1, n + 1))  # type: ignore[type-var]
    # sibling users: a strictly higher LevelFS always ranks strictly higher
    tree_ = build_tree(accounts, users)
    by_key = {row.user and (row.account, row.user): row for row in user_rows}
    for assoc in tree_.associations:
        siblings = [c for c in assoc.fs_children if c.is_user]
        for a in siblings:
            for b in siblings:
                ra, rb = by_key[a.key], by_key[b.key]  # type: ignore[index]
                if (
                    ra.level_fs is not None
                    and rb.level_fs is not None
                    and ra.level_fs > rb.level_fs
                ):
                    assert ra.rank > rb.rank  # type: ignore[operator]
    # the input order does not matter
    shuffled_accounts, shuffled_users = accounts[:], users[:]
    rnd.shuffle(shuffled_accounts)
    rnd.shuffle(shuffled_users)
    assert compute_fair_tree(shuffled_accounts, shuffled_users) == result


# --- the siblings' order: one lexsort in place of Slurm's qsort with `_cmp_level_fs` ----------


def compare_level_fs(a: tuple[np.longdouble, bool], b: tuple[np.longdouble, bool]) -> int:
    """Slurm's `_cmp_level_fs` on (LevelFS, is_user): higher LevelFS first, then users first."""
    if a[0] != b[0]:
        return 1 if a[0] < b[0] else -1
    if a[1] == b[1]:
        return 0
    return -1 if a[1] else 1


_LEVEL_FS = st.sampled_from([0.0, 0.5, 1.0, 2.0, float("inf"), 4294967294.0])  # NO_VAL too


@given(st.lists(st.tuples(st.integers(0, 2), _LEVEL_FS, st.booleans()), max_size=20))
def test_the_bulk_sort_orders_each_sibling_list_as_slurms_comparator_does(
    entries: list[tuple[int, float, bool]],
) -> None:
    group = np.array([g for g, _, _ in entries], dtype=np.intp)
    level_fs = np.array([lf for _, lf, _ in entries], dtype=np.longdouble)
    is_user = np.array([u for _, _, u in entries], dtype=np.bool_)
    order = sibling_order(group, level_fs, is_user).tolist()
    for owner in set(group.tolist()):
        members = [i for i in range(len(entries)) if group[i] == owner]  # lineage order
        # qsort is glibc's merge sort: stable, so ties keep lineage order, as sorted() does.
        by_slurm = sorted(
            members,
            key=functools.cmp_to_key(
                lambda a, b: compare_level_fs((level_fs[a], is_user[a]), (level_fs[b], is_user[b]))
            ),
        )
        assert [i for i in order if group[i] == owner] == by_slurm
    # Each list is contiguous, lists in owner order.
    assert [group[i] for i in order] == sorted(group.tolist())


# --- the fast implementation against the first, object-per-association one ------------------

_ACCOUNT_NAMES = ["a", "a-b", "a.b", "b", "0-u", "0-v", "c", "d", "e", "f", "g", "h"]
_USER_NAMES = ["u", "v", "w", "x", "y", "z", *(f"n{i}" for i in range(30))]
_ORACLE_SHARES = st.one_of(
    st.integers(0, 4), st.just(PARENT), st.integers(PARENT - 3, PARENT - 1), st.integers(0, 1000)
)
# Small integers tie; k * (1, 3, 9, 14) with shares 1 and 3 make long-double near-ties; the
# wide floats (subnormals to 1e18) make sequential and pairwise long-double sums differ.
_ORACLE_USAGE = st.one_of(
    st.just(0.0),
    st.integers(0, 3).map(float),
    st.tuples(st.sampled_from([1, 3, 9, 14]), st.sampled_from([1.0, 0.1, 1e6])).map(
        lambda p: p[0] * p[1]
    ),
    st.floats(0, 1e18),
    st.just(-0.0),  # valid usage; Slurm's sums start from +0
)


@st.composite
def oracle_trees(draw: st.DrawFn) -> tuple[list[SlurmAccount], list[SlurmUser]]:
    names = draw(st.lists(st.sampled_from(_ACCOUNT_NAMES), unique=True, max_size=9))
    accounts: list[SlurmAccount] = []
    for name in names:
        parent = draw(st.sampled_from([ROOT] + [a.name for a in accounts]))
        accounts.append(SlurmAccount(name, parent, draw(_ORACLE_SHARES)))
    holders = [ROOT] + [a.name for a in accounts]
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(_USER_NAMES), st.sampled_from(holders)),
            unique=True,
            min_size=0,
            max_size=40,
        )
    )
    users = [SlurmUser(n, h, draw(_ORACLE_SHARES), draw(_ORACLE_USAGE)) for n, h in pairs]
    return accounts, users


def _exactly(value: object) -> object:
    """A value with its type and sign, so that == on it is bit equality (no NaN here)."""
    if isinstance(value, float | np.floating):
        return (type(value), value, bool(np.signbit(value)))
    return (type(value), value)


def assert_matches_oracle(accounts: list[SlurmAccount], users: list[SlurmUser]) -> None:
    result = compute_fair_tree(accounts, users)
    expected = oracle_rows(accounts, users)
    assert result.user_count == sum(1 for row in expected if row.is_user)
    assert len(result.rows) == len(expected)
    for got, want in zip(result.rows, expected, strict=True):
        for name in FairTreeRow.__dataclass_fields__:
            assert _exactly(getattr(got, name)) == _exactly(getattr(want, name)), (name, want)
        assert got.sshare_line() == want.sshare_line()
    assert result.fair_shares() == {
        (row.account, row.user): row.fair_share
        for row in expected
        if row.user is not None and row.fair_share is not None
    }


@settings(deadline=None)
@given(oracle_trees())
def test_fair_tree_equals_the_oracle(tree: tuple[list[SlurmAccount], list[SlurmUser]]) -> None:
    assert_matches_oracle(*tree)


@settings(deadline=None)
@given(oracle_trees())
def test_build_tree_equals_the_oracle(tree: tuple[list[SlurmAccount], list[SlurmUser]]) -> None:
    """The linked tree classic fair-share runs on: links, level shares, long double usage."""
    built = build_tree(*tree)
    expected = oracle_tree(*tree)
    assert built.root is built.associations[0]

    def key(node: object) -> object:
        return None if node is None else (node.account, node.user)  # type: ignore[attr-defined]

    assert len(built.associations) == len(expected)
    for got, want in zip(built.associations, expected, strict=True):
        assert (got.account, got.user, got.shares, got.lineage) == (
            want.account,
            want.user,
            want.shares,
            want.lineage,
        )
        assert (key(got.parent), key(got.fs_parent)) == (key(want.parent), key(want.fs_parent))
        assert [key(c) for c in got.fs_children] == [key(c) for c in want.fs_children]
        assert [key(c) for c in got.children] == [key(c) for c in want.children]
        assert got.level_shares == want.level_shares and type(got.level_shares) is int
        assert _exactly(got.usage_raw) == _exactly(want.usage_raw)


@pytest.mark.parametrize("seed", range(3))
def test_a_large_site_equals_the_oracle(seed: int) -> None:
    """A bench-shaped site (two account levels, ~20 users each, second associations, usages
    with ties and huge values): long sibling lists and long usage sums."""
    rnd = random.Random(seed)
    tops = [SlurmAccount(f"t{i}", ROOT, rnd.choice([1, 5, PARENT])) for i in range(6)]
    leaves = [
        SlurmAccount(f"t{i % 6}_g{i}", f"t{i % 6}", rnd.choice([0, 1, 3, 10, PARENT]))
        for i in range(40)
    ]
    holders = [a.name for a in leaves] + [ROOT, "t0"]
    users = []
    for i in range(900):
        pick = rnd.random()
        usage = (
            0.0
            if pick < 0.25
            else float(rnd.choice([1000, 3600]))
            if pick < 0.45
            else rnd.uniform(1e12, 1e15)
            if pick < 0.47
            else rnd.uniform(0, 1e7)
        )
        shares = rnd.choice([0, 1, 2, 3, 4, PARENT]) if i % 50 else PARENT
        users.append(SlurmUser(f"user{i % 800}", holders[i % len(holders)], shares, usage))
    assert_matches_oracle([*tops, *leaves], users)


@pytest.mark.parametrize(
    ("accounts", "users"),
    [
        ([acct("A", "B"), acct("B", "A")], []),
        ([acct("A"), acct("A")], []),
        ([acct("A", "nowhere")], []),
        ([], [user("u", "A")]),
        ([], [user("u"), user("u")]),
        ([acct("A")], [user("u", "A"), user("v", "B"), user("u", "A")]),
        ([acct("A")], [user("u", "A"), user("u", "A"), user("v", "B")]),
    ],
)
def test_malformed_trees_are_refused_with_the_oracles_error(
    accounts: list[SlurmAccount], users: list[SlurmUser]
) -> None:
    with pytest.raises(InvalidValue) as expected:
        oracle_rows(accounts, users)
    with pytest.raises(InvalidValue, match=f"^{re.escape(str(expected.value))}$"):
        compute_fair_tree(accounts, users)
