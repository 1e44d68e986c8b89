"""Slurm sites' usage and fair-share over the site state (ledger.site_usage), pure: continuous
usage from job spans and opening balances, the site's tree as Slurm's, and the ranking
update-fshare keeps. Expected values are computed by hand from the issue's formula."""

from __future__ import annotations

import math

import pytest

from ledger.site_usage import (
    AssociationUsage,
    BalanceEntry,
    JobSpan,
    continuous_usage,
    site_ranking,
    slurm_tree,
)
from ledger.slurm_shares import PARENT
from tests.unit.site_events import T0, bank, given, user

HL = 604800.0  # the site's default half-life


def edit(*pairs: tuple[str, str]):  # type: ignore[no-untyped-def]
    return lambda s, st: s.edit_config(st, list(pairs))


def site(*more):  # type: ignore[no-untyped-def]
    return given(
        edit(("fairshare_algorithm", "fair-tree")),
        bank("root"),
        bank("a", "root", 30),
        bank("b", "root", 10),
        user("amy", "a"),
        user("bob", "b"),
        user("cat", "root", shares=PARENT),
        *more,
    ).state


def usage(values: dict[str, float]) -> dict[tuple[str, str], AssociationUsage]:
    banks = {"amy": "a", "bob": "b", "cat": "root"}
    return {(u, banks[u]): AssociationUsage(v, []) for u, v in values.items()}


def test_a_job_decays_continuously_with_the_half_life() -> None:
    state = site()
    span = JobSpan(None, "amy", "a", 2.0, T0, T0 + HL)
    at = T0 + 2 * HL
    # 2 · hl/ln2 · (2^-1 − 2^-2)
    expected = 2.0 * HL / math.log(2) * (0.5 - 0.25)
    assert continuous_usage(state, [span], [], at)[("amy", "a")].usage == pytest.approx(
        expected, rel=1e-14
    )


def test_a_balance_decays_from_its_moment_and_covers_the_time_before_it() -> None:
    state = site()
    jobs = [JobSpan(None, "bob", "b", 1.0, T0 - 100, T0 + 100)]
    balance = [BalanceEntry("bob", "b", float(T0), 1000.0)]
    at = T0 + HL
    # the balance halved after one half-life; only the job's 100 s after the balance count
    job_part = HL / math.log(2) * (2 ** (-(HL - 100) / HL) - 2 ** (-1))
    got = continuous_usage(state, jobs, balance, at)[("bob", "b")].usage
    assert got == pytest.approx(500.0 + job_part, rel=1e-12)


def test_a_reset_boundary_drops_balances_and_job_time_before_it() -> None:
    state = site(edit(("priority_usage_reset_period", "DAILY")))
    # T0 is 2023-11-14 22:13:20 UTC: the next midnight is T0 + 6400
    midnight = T0 + 6400
    jobs = [JobSpan(None, "amy", "a", 3.0, midnight - 600, midnight + 600)]
    balance = [BalanceEntry("amy", "a", float(T0), 1e6)]
    got = continuous_usage(state, jobs, balance, midnight + 600)[("amy", "a")].usage
    assert got == pytest.approx(3.0 * HL / math.log(2) * (1 - 2 ** (-600 / HL)), rel=1e-12)


def test_a_duration_reset_means_no_reset_under_the_continuous_model() -> None:
    state = site()  # the default 4 weeks
    jobs = [JobSpan(None, "amy", "a", 1.0, T0, T0 + 10)]
    got = continuous_usage(state, jobs, [], T0 + 10 * HL)[("amy", "a")].usage
    assert got > 0.0


def test_the_sites_tree_as_slurms() -> None:
    state = site(bank("c", "a", 5), user("dan", "c"))
    accounts, users, keys = slurm_tree(
        state, {**usage({"amy": 1, "bob": 2, "cat": 3}), ("dan", "c"): AssociationUsage(4, [])}
    )
    assert [(a.name, a.parent, a.shares) for a in accounts] == [
        ("a", "root", 30),
        ("b", "root", 10),
        ("c", "a", 5),
    ]
    assert sorted((u.name, u.account, u.shares, u.usage) for u in users) == [
        ("amy", "a", 1, 1),
        ("bob", "b", 1, 2),
        ("cat", "root", PARENT, 3),
        ("dan", "c", 1, 4),
    ]
    assert keys[("root", "cat")] == ("cat", "root")


def test_fair_tree_ranks_the_site_and_classic_gives_its_factors() -> None:
    state = site()
    # LevelFS: a 0.75/(10/40) = 3, b 0.25/(30/40) = 1/3; cat (parent) ∞ ranks first
    ranking = site_ranking(state, usage({"amy": 10, "bob": 30, "cat": 0}))
    assert ranking.fairshare() == {
        ("cat", "root"): 1.0,
        ("amy", "a"): 2 / 3,
        ("bob", "b"): 1 / 3,
    }
    classic = given(
        edit(("fairshare_algorithm", "classic")),
        bank("root"),
        bank("a", "root", 30),
        bank("b", "root", 10),
        user("amy", "a"),
        user("bob", "b"),
    ).state
    factors = site_ranking(classic, usage({"amy": 10, "bob": 30})).fairshare()
    # first tier: UE = usage share; S = 30/40 and 10/40; F = 2^(-UE/S)
    assert factors[("amy", "a")] == pytest.approx(2 ** (-(10 / 40) / (30 / 40)), rel=1e-12)
    assert factors[("bob", "b")] == pytest.approx(2 ** (-(30 / 40) / (10 / 40)), rel=1e-12)
    assert site_ranking(classic, usage({"amy": 10, "bob": 30})).ranks == {
        ("amy", "a"): 2,
        ("bob", "b"): 1,
    }
