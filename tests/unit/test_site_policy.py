"""The fair-share policy as config (issue 13): algorithm, usage model, dampening, priority
flags and Slurm's reset names, in memory: given events, a command, then events or a refusal."""

from __future__ import annotations

import pytest

from ledger.errors import InvalidValue
from ledger.site import Site, default_config
from tests.unit.site_events import (
    DECAY_FACTOR,
    HALF_LIFE,
    RESET_PERIOD,
    STAMP,
    T0,
    bank,
    given,
    refused,
    then,
    user,
)


def edit(*pairs: tuple[str, str]):  # type: ignore[no-untyped-def]
    return lambda s, st: s.edit_config(st, list(pairs))


def test_a_new_site_runs_the_weighted_walk_on_periods() -> None:
    state = given().state
    assert (state.fairshare_algorithm, state.usage_model) == ("weighted-walk", "periods")
    assert (state.dampening_factor, state.priority_flags) == (1, [])


def test_the_algorithm_is_a_config_change_from_its_default_and_brings_its_usage_model() -> None:
    site = given()
    assert then(site, edit(("fairshare_algorithm", "Fair-Tree"))) == [
        (
            "ConfigChanged",
            {"key": "fairshare_algorithm", "old": "weighted-walk", "new": "fair-tree"},
        )
    ]
    assert site.state.usage_model == "continuous"  # unset: follows the algorithm


def test_the_usage_model_set_by_hand_wins_and_its_old_value_is_the_one_in_force() -> None:
    site = given(edit(("fairshare_algorithm", "classic")))
    assert then(site, edit(("usage_model", "periods"))) == [
        ("ConfigChanged", {"key": "usage_model", "old": "continuous", "new": "periods"})
    ]
    assert site.state.usage_model == "periods"
    site = given()
    assert then(site, edit(("usage_model", "continuous"))) == [
        ("ConfigChanged", {"key": "usage_model", "old": "periods", "new": "continuous"})
    ]
    assert site.state.fairshare_algorithm == "weighted-walk"


def test_dampening_and_priority_flags_are_stored_in_their_normal_form() -> None:
    site = given()
    assert then(
        site,
        edit(("fairshare_dampening_factor", "04"), ("priority_flags", " max_tres_gres, MAX_TRES,")),
    ) == [
        ("ConfigChanged", {"key": "fairshare_dampening_factor", "old": "1", "new": "4"}),
        (
            "ConfigChanged",
            {"key": "priority_flags", "old": "", "new": "MAX_TRES_GRES,MAX_TRES"},
        ),
    ]
    assert site.state.dampening_factor == 4
    assert site.state.priority_flags == ["MAX_TRES_GRES", "MAX_TRES"]


def test_a_slurm_reset_name_is_taken_under_the_continuous_model() -> None:
    site = given()
    assert then(
        site,
        edit(("usage_model", "continuous"), ("priority_usage_reset_period", "monthly")),
    ) == [
        ("ConfigChanged", {"key": "usage_model", "old": "periods", "new": "continuous"}),
        (
            "ConfigChanged",
            {"key": "priority_usage_reset_period", "old": "2419200", "new": "MONTHLY"},
        ),
    ]


def test_create_db_records_an_algorithm_other_than_the_default() -> None:
    config = default_config(HALF_LIFE, RESET_PERIOD, DECAY_FACTOR, "CLASSIC")
    assert config["fairshare_algorithm"] == "classic"
    assert "fairshare_algorithm" not in default_config(HALF_LIFE, RESET_PERIOD, DECAY_FACTOR)
    site = Site.create(STAMP, epoch=float(T0), config=config)
    assert site.state.fairshare_algorithm == "classic"
    assert site.state.usage_model == "continuous"


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (
            [("fairshare_algorithm", "fairtree")],
            "invalid fairshare_algorithm: 'fairtree' (must be one of weighted-walk, fair-tree, "
            "classic)",
        ),
        (
            [("usage_model", "decayed")],
            "invalid usage_model: 'decayed' (must be one of periods, continuous)",
        ),
        (
            [("fairshare_dampening_factor", "0")],
            "invalid fairshare_dampening_factor: '0' (must be an integer from 1 to 65535)",
        ),
        (
            [("fairshare_dampening_factor", "1.5")],
            "invalid fairshare_dampening_factor: '1.5' (must be an integer from 1 to 65535)",
        ),
        (
            [("fairshare_dampening_factor", "65536")],
            "invalid fairshare_dampening_factor: '65536' (must be an integer from 1 to 65535)",
        ),
        (
            [("priority_flags", "MAX_TRES,NO_FAIR_TREE")],
            "invalid priority_flags: NO_FAIR_TREE is chosen with fairshare_algorithm "
            "(weighted-walk, fair-tree, classic)",
        ),
        (
            # the periods model counts whole half-lives: a calendar reset makes no sense there
            [("priority_usage_reset_period", "WEEKLY")],
            "priority_usage_reset_period WEEKLY needs usage_model continuous: the periods model "
            "resets after a duration (such as 4w)",
        ),
        (
            [("priority_usage_reset_period", "HOURLY")],
            "invalid Flux standard duration: 'HOURLY' (use e.g. 30s, 5m, 2h, 7d, 1w or seconds)",
        ),
    ],
)
def test_policy_refusals(pairs: list[tuple[str, str]], message: str) -> None:
    assert refused(given(), edit(*pairs), InvalidValue) == message


def test_back_to_periods_with_a_reset_name_in_force_is_refused() -> None:
    site = given(
        edit(("fairshare_algorithm", "fair-tree"), ("priority_usage_reset_period", "DAILY"))
    )
    message = (
        "priority_usage_reset_period DAILY needs usage_model continuous: the periods model "
        "resets after a duration (such as 4w)"
    )
    assert refused(site, edit(("fairshare_algorithm", "weighted-walk")), InvalidValue) == message
    assert refused(site, edit(("usage_model", "periods")), InvalidValue) == message


# --- users beside sub-banks -------------------------------------------------------------------
def test_the_weighted_walk_also_lets_a_bank_hold_users_and_sub_banks() -> None:
    """Issue 13: for every algorithm (flux-accounting refuses it, t1079; our walk weighs a
    bank's users and sub-banks as siblings, so nothing needs the refusal)."""
    site = given(bank("root"), bank("a", "root"))
    assert [name for name, _ in then(site, user("amy", "root"))] == ["AssociationAdded"]
    site = given(bank("root"), user("amy", "root"))
    assert [name for name, _ in then(site, bank("a", "root"))] == ["BankAdded"]


def test_slurm_algorithms_let_a_bank_hold_users_and_sub_banks_even_root() -> None:
    site = given(edit(("fairshare_algorithm", "fair-tree")), bank("root"), bank("a", "root"))
    assert [name for name, _ in then(site, user("u1", "root"))] == ["AssociationAdded"]
    site = given(
        edit(("fairshare_algorithm", "classic")),
        bank("root"),
        user("u1", "root"),
        bank("a", "root"),
    )
    assert site.state.banks["a"].parent_bank == "root"
    assert site.state.association("u1", "root") is not None


def test_a_mixed_tree_switches_between_algorithms() -> None:
    site = given(
        edit(("fairshare_algorithm", "fair-tree")),
        bank("root"),
        bank("a", "root"),
        user("u1", "root"),
    )
    assert [name for name, _ in then(site, edit(("fairshare_algorithm", "weighted-walk")))] == [
        "ConfigChanged"
    ]


def test_slurm_algorithms_refuse_names_their_tree_cannot_hold() -> None:
    slurm = edit(("fairshare_algorithm", "classic"))
    assert refused(given(slurm, bank("top")), bank("a/b", "top"), InvalidValue) == (
        "invalid bank name for Slurm's fair-share: 'a/b' (contains '/')"
    )
    assert refused(given(slurm, bank("top")), bank("root", "top"), InvalidValue) == (
        "invalid bank name for Slurm's fair-share: 'root' names the root (Slurm's cluster "
        "association) and this bank is not the root bank"
    )
    assert refused(given(slurm, bank("root")), user("x/y", "root"), InvalidValue) == (
        "invalid user name for Slurm's fair-share: 'x/y' (contains '/')"
    )
    flux_site = given(bank("top"), bank("root", "top"))
    assert refused(flux_site, edit(("fairshare_algorithm", "fair-tree")), InvalidValue).startswith(
        "invalid bank name for Slurm's fair-share: 'root'"
    )


def test_half_life_zero_means_no_decay_and_needs_a_reset_as_in_slurm() -> None:
    site = given(edit(("fairshare_algorithm", "fair-tree")))
    assert then(
        site,
        edit(("priority_decay_half_life", "0"), ("priority_usage_reset_period", "WEEKLY")),
    ) == [
        ("ConfigChanged", {"key": "priority_decay_half_life", "old": "604800", "new": "0"}),
        (
            "ConfigChanged",
            {"key": "priority_usage_reset_period", "old": "2419200", "new": "WEEKLY"},
        ),
    ]
    message = (
        "priority_decay_half_life 0 (no decay) needs usage_model continuous and a "
        "priority_usage_reset_period of DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY"
    )
    assert refused(site, edit(("priority_usage_reset_period", "NONE")), InvalidValue) == message
    assert refused(site, edit(("usage_model", "periods")), InvalidValue) == message
    assert refused(given(), edit(("priority_decay_half_life", "0")), InvalidValue) == message


def test_the_root_cannot_take_fairshare_parent_on_a_slurm_site() -> None:
    parent = 0x7FFFFFFF  # Slurm's SLURMDB_FS_USE_PARENT, written out
    message = (
        "invalid shares for the root bank root: 2147483647 is Fairshare=parent, and the root "
        "has no parent to take its shares from"
    )
    slurm = edit(("fairshare_algorithm", "fair-tree"))
    assert refused(given(slurm), bank("root", shares=parent), InvalidValue) == message
    site = given(slurm, bank("root"))
    edit_root = lambda s, st: s.edit_bank(st, "root", parent)  # noqa: E731
    assert refused(site, edit_root, InvalidValue) == message
    # An account below the root may take it; the weighted walk reads it as a number.
    assert [name for name, _ in then(site, bank("a", "root", shares=parent))] == ["BankAdded"]
    flux = given(bank("root", shares=parent))
    assert refused(flux, slurm, InvalidValue) == message
