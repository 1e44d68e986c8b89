"""Classic fair-share (`ledger.classic_fairshare`) against Slurm's test24.1 and test_130_2.

Both vectors give sshare's printed values (`%f`), or a leading substring of the line (test24.1's
User6); rows are compared as the exact strings sshare would print, no tolerance.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.classic_fairshare import compute_classic_fairshare
from ledger.errors import InvalidValue
from ledger.fair_tree import LONG_DOUBLE_IS_X87
from ledger.slurm_shares import PARENT, ROOT, SlurmAccount, SlurmUser
from tests.unit.slurm_vectors import expected_fields, load_vector

CLASSIC_COLUMNS = 8  # Account .. FairShare

VECTORS = {name: load_vector(name) for name in ("test24_1", "test_130_2")}
CASES = [(name, i) for name, vector in VECTORS.items() for i in range(len(vector.expected))]


def acct(name: str, parent: str = ROOT, shares: int = 1) -> SlurmAccount:
    return SlurmAccount(name, parent, shares)


def user(name: str, account: str = ROOT, shares: int = 1, usage: float = 0.0) -> SlurmUser:
    return SlurmUser(name, account, shares, usage)


@pytest.mark.parametrize(("name", "index"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_vector_row(name: str, index: int) -> None:
    vector = VECTORS[name]
    expected = expected_fields(vector.expected[index], CLASSIC_COLUMNS)
    result = compute_classic_fairshare(vector.accounts, vector.users)
    row = result.user(expected[0], expected[1])
    assert row.sshare_fields()[: len(expected)] == expected


def test_vector_sizes() -> None:
    assert len(CASES) == 6 + 12


def test_test24_1_user6_full_row() -> None:
    # test24.1 only checks `AccountG|User6|0|`; the rest follows from the formulas.
    v = VECTORS["test24_1"]
    row = compute_classic_fairshare(v.accounts, v.users).user("AccountG", "User6")
    assert row.sshare_line() == "AccountG|User6|0|0.000000|30|0.300000|0.300000|0.000000|"


def test_root_and_account_rows() -> None:
    v = VECTORS["test_130_2"]
    result = compute_classic_fairshare(v.accounts, v.users)
    # classic root: NormShares 1 (empty product), NormUsage unset, EffectvUsage 1
    assert result.account(ROOT).sshare_line() == "root|||1.000000|210||1.000000||"
    assert result.account("AccountHTA").sshare_line() == (
        "AccountHTA||parent|0.333333|45|0.214286|0.523810||"
    )


# --- dampening -----------------------------------------------------------------------------


def test_dampening_factor_divides_the_exponent() -> None:
    users = [user("over", shares=1, usage=90), user("under", shares=1, usage=10)]
    plain = compute_classic_fairshare([], users).user(ROOT, "over").fair_share
    damped = compute_classic_fairshare([], users, fairshare_dampening_factor=10)
    over = damped.user(ROOT, "over").fair_share
    assert plain == pytest.approx(2 ** -(0.9 / 0.5))
    assert over == pytest.approx(2 ** -(0.9 / 0.5 / 10))
    assert over is not None and plain is not None and over > plain


@pytest.mark.parametrize("bad", [0, -1, 65536, 1.5, True])
def test_dampening_factor_is_a_uint16_of_at_least_one(bad: object) -> None:
    with pytest.raises(InvalidValue):
        compute_classic_fairshare([], [user("u")], fairshare_dampening_factor=bad)  # type: ignore[arg-type]


# --- long double ----------------------------------------------------------------------------


@pytest.mark.skipif(not LONG_DOUBLE_IS_X87, reason="numpy.longdouble is not x87 here")
def test_exponent_in_long_double_prints_like_slurm() -> None:
    # x: S = 0.1 (double), UE = UN = 0.7 (long double): UE / S is exactly 7 in long double,
    # 6.999999999999999 in doubles, so F is 2^-7 = 0.0078125, printed 0.007812 (half to even).
    users = [user("x", shares=1, usage=7), user("y", shares=9, usage=3)]
    row = compute_classic_fairshare([], users).user(ROOT, "x")
    assert row.fair_share == 2.0**-7
    assert row.sshare_fields()[7] == "0.007812"
    in_doubles = math.pow(2.0, -((7 / 10) / (1 / 10)))
    assert f"{in_doubles:f}" == "0.007813"


# --- Fairshare=parent -----------------------------------------------------------------------


def test_parent_users_take_their_accounts_factor() -> None:
    accounts = [acct("A", shares=3), acct("B", shares=1)]
    users = [
        user("p1", "A", PARENT, 10),
        user("p2", "A", PARENT, 50),
        user("b", "B", 1, 40),
    ]
    result = compute_classic_fairshare(accounts, users)
    a = result.account("A")
    assert a.norm_shares == 0.75 and a.effective_usage == pytest.approx(0.6)
    for name in ("p1", "p2"):
        row = result.user("A", name)
        assert row.norm_shares == 0.75
        assert row.effective_usage == a.effective_usage
        assert row.fair_share == pytest.approx(2 ** -(0.6 / 0.75))


def test_parent_account_is_skipped_in_the_shares_product() -> None:
    accounts = [acct("A", shares=1), acct("Z", shares=3), acct("P", "A", PARENT)]
    users = [user("p", "P", shares=2, usage=5), user("a", "A", shares=2, usage=5)]
    result = compute_classic_fairshare(accounts, users)
    # p competes in A's list (level shares 0 + 2 + 2 = 4), times A's 1/4
    assert result.user("P", "p").norm_shares == (2 / 4) * (1 / 4)
    assert result.account("P").norm_shares == result.account("A").norm_shares == 0.25


def test_parent_user_directly_under_root_gets_two_to_the_minus_one_over_d() -> None:
    users = [user("p", shares=PARENT, usage=5), user("q", usage=5)]
    assert compute_classic_fairshare([], users).user(ROOT, "p").fair_share == 0.5
    damped = compute_classic_fairshare([], users, fairshare_dampening_factor=4)
    assert damped.user(ROOT, "p").fair_share == 2**-0.25


# --- edges ----------------------------------------------------------------------------------


def test_no_usage_anywhere_gives_one_to_every_user_with_shares() -> None:
    result = compute_classic_fairshare(
        [acct("A")], [user("a", "A"), user("r"), user("z", shares=0)]
    )
    assert result.user("A", "a").fair_share == 1.0
    assert result.user(ROOT, "r").fair_share == 1.0
    assert result.user(ROOT, "z").fair_share == 0.0  # zero shares: F = 0
    assert all(row.norm_usage in (None, 0.0) for row in result.rows)


def test_zero_level_shares_inherit_the_parents_effective_usage() -> None:
    accounts = [acct("A", shares=1), acct("B", shares=1)]
    users = [user("a", "A", shares=0, usage=10), user("b", "B", usage=30)]
    result = compute_classic_fairshare(accounts, users)
    assert result.user("A", "a").effective_usage == result.account("A").effective_usage == 0.25
    assert result.user("A", "a").fair_share == 0.0


def test_empty_account_and_users_beside_sub_accounts() -> None:
    accounts = [acct("A", shares=2), acct("A1", "A", 1), acct("empty", shares=2)]
    users = [user("r", ROOT, 1, 10), user("a", "A", 1, 10), user("a1", "A1", 1, 10)]
    result = compute_classic_fairshare(accounts, users)
    # root level shares 1 + 2 + 2 = 5. r: S 1/5, UE = UN = 1/3, F = 2^-(5/3).
    # a: S 2/5 * 1/2, UE = 1/3 + (2/3 - 1/3) / 2 = 1/2, F = 2^-2.5; A1 the same, and a1 (alone
    # in A1) UE = 1/3 + (1/2 - 1/3) * 1 = 1/2. The empty account only adds its shares.
    assert [row.sshare_line() for row in result.rows] == [
        "root|||1.000000|30||1.000000||",
        "root|r|1|0.200000|10|0.333333|0.333333|0.314980|",
        "A||2|0.400000|20|0.666667|0.666667||",
        "A|a|1|0.200000|10|0.333333|0.500000|0.176777|",
        "A1||1|0.200000|10|0.333333|0.500000||",
        "A1|a1|1|0.200000|10|0.333333|0.500000|0.176777|",
        "empty||2|0.400000|0|0.000000|0.000000||",
    ]


# --- invariants -----------------------------------------------------------------------------

SHARES = st.one_of(st.integers(0, 50), st.just(PARENT))
USAGE = st.one_of(st.just(0.0), st.integers(0, 100).map(float), st.floats(0, 1e6))


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[SlurmAccount], list[SlurmUser]]:
    accounts: list[SlurmAccount] = []
    for i in range(draw(st.integers(0, 6))):
        parent = draw(st.sampled_from([ROOT] + [a.name for a in accounts]))
        accounts.append(SlurmAccount(f"a{i}", parent, draw(SHARES)))
    holders = [ROOT] + [a.name for a in accounts]
    users = [
        SlurmUser(f"u{i}", draw(st.sampled_from(holders)), draw(SHARES), draw(USAGE))
        for i in range(draw(st.integers(1, 10)))
    ]
    return accounts, users


@settings(deadline=None)
@given(trees(), st.integers(1, 100), st.randoms(use_true_random=False))
def test_classic_invariants(
    tree: tuple[list[SlurmAccount], list[SlurmUser]], damp: int, rnd: random.Random
) -> None:
    accounts, users = tree
    result = compute_classic_fairshare(accounts, users)
    damped = compute_classic_fairshare(accounts, users, fairshare_dampening_factor=damp)
    for row in result.rows:
        assert 0 <= row.norm_shares <= 1
        assert 0 <= row.effective_usage <= 1
        assert row.norm_usage is None or 0 <= row.norm_usage <= 1
        if row.is_user:
            assert row.fair_share is not None and 0 <= row.fair_share <= 1
            # dampening never lowers a factor
            damped_factor = damped.user(row.account, row.user)  # type: ignore[arg-type]
            assert damped_factor.fair_share is not None
            assert damped_factor.fair_share >= row.fair_share
        else:
            assert row.fair_share is None
    shuffled_accounts, shuffled_users = accounts[:], users[:]
    rnd.shuffle(shuffled_accounts)
    rnd.shuffle(shuffled_users)
    assert compute_classic_fairshare(shuffled_accounts, shuffled_users) == result
