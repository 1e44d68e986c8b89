"""What a fair-share checkpoint writes (projections.writers.checkpoints.plan), in memory: only
the entries that changed since the previous checkpoint, over a full one, or the whole site when
the changes would make the next update's read back longer than writing it whole; and when that
is known without the previous checkpoint's entries (whole_without_previous)."""

from __future__ import annotations

from ledger.fairshare import Ranking
from ledger.site_usage import AssociationUsage, AssocKey
from ledger.state import SiteState
from projections.writers.checkpoints import Written, plan, whole_without_previous
from tests.unit.test_fairshare_in_force import site as site_of

SITE = 10
USERS: list[AssocKey] = [(f"user{n}", "A") for n in range(SITE)]
PREVIOUS = 100  # the previous checkpoint's log position
POSITION = 200  # this one's


def site() -> SiteState:
    return site_of(*[(username, bank, 10.0, True) for username, bank in USERS])


def usage(moved: int) -> dict[AssocKey, AssociationUsage]:
    """Every association's usage, the first `moved` of them with new jobs since the last."""
    return {
        key: AssociationUsage(float(n) + (0.5 if n < moved else 0.0), [])
        for n, key in enumerate(USERS)
    }


def ranking() -> Ranking:
    """The same ranks at both walks: the usage alone tells the changed entries apart."""
    return Ranking({key: SITE - n for n, key in enumerate(USERS)}, SITE)


def previous(chain_rows: int) -> Written:
    """A checkpoint at PREVIOUS over the full one at 1, `chain_rows` changes into its chain."""
    state = site()
    entries = plan(state, PREVIOUS, usage(0), ranking(), None).written.entries
    return Written(1, chain_rows, PREVIOUS, entries)


def test_fewer_changes_than_half_the_site_are_written_as_changes() -> None:
    planned = plan(site(), POSITION, usage(4), ranking(), previous(0))

    assert [row[1] for row in planned.rows] == [name for name, _ in USERS[:4]]
    written = planned.written
    assert (written.base, written.chain_rows, written.position) == (1, 4, POSITION)


def test_changes_of_half_the_site_or_more_are_written_whole() -> None:
    """The rows it writes again cost less than reading them back under it: the next update
    would read the full checkpoint and every change since, twice the site at most."""
    for moved in (5, 9):
        planned = plan(site(), POSITION, usage(moved), ranking(), previous(0))

        assert [row[1] for row in planned.rows] == [name for name, _ in USERS]
        written = planned.written
        assert (written.base, written.chain_rows) == (POSITION, 0), moved


def test_a_chain_that_would_reach_the_site_starts_a_full_checkpoint() -> None:
    planned = plan(site(), POSITION, usage(3), ranking(), previous(7))

    assert len(planned.rows) == SITE
    assert (planned.written.base, planned.written.chain_rows) == (POSITION, 0)

    short = plan(site(), POSITION, usage(3), ranking(), previous(6))
    assert len(short.rows) == 3
    assert (short.written.base, short.written.chain_rows) == (1, 9)


def test_the_first_checkpoint_is_full_and_an_unchanged_one_writes_no_row() -> None:
    first = plan(site(), PREVIOUS, usage(0), ranking(), None)
    assert len(first.rows) == SITE and first.written.base == PREVIOUS

    same = plan(site(), POSITION, usage(0), ranking(), previous(2))
    assert same.rows == []
    assert (same.written.base, same.written.chain_rows) == (1, 2)


def test_a_whole_checkpoint_known_from_the_columns_is_the_one_planned_after_the_previous() -> None:
    """Half the site's columns changed, where the columns hold the previous checkpoint, and
    every association ranked: whole, and planned without the previous entries it is the same
    checkpoint, row for row."""
    for moved in (5, 9, 10):
        last = previous(0)
        assert whole_without_previous(site(), ranking(), last, moved, PREVIOUS), moved

        with_previous = plan(site(), POSITION, usage(moved), ranking(), last)
        without = plan(site(), POSITION, usage(moved), ranking(), None)
        assert without.rows == with_previous.rows
        assert len(without.rows) == SITE
        assert without.written.entries == with_previous.written.entries
        assert (without.written.base, without.written.chain_rows) == (POSITION, 0)


def test_a_chain_near_the_site_makes_fewer_changed_columns_enough() -> None:
    assert not whole_without_previous(site(), ranking(), previous(0), 3, PREVIOUS)
    assert whole_without_previous(site(), ranking(), previous(7), 3, PREVIOUS)
    assert plan(site(), POSITION, usage(3), ranking(), previous(7)).written.base == POSITION


def test_the_previous_entries_are_needed_for_fewer_changes_other_columns_or_an_unranked_one() -> (
    None
):
    # Fewer than half changed: written as changes, which only the previous entries tell.
    assert not whole_without_previous(site(), ranking(), previous(0), 4, PREVIOUS)
    # The columns hold another update than the previous checkpoint's (an update-usage since):
    # a changed column says nothing about the entries (None: no settled update at all).
    assert not whole_without_previous(site(), ranking(), previous(0), SITE, POSITION - 1)
    assert not whole_without_previous(site(), ranking(), previous(0), SITE, None)
    # An association the walk did not rank carries its value over from the previous entry.
    inactive = site_of(
        *[(username, bank, 10.0, n != 0) for n, (username, bank) in enumerate(USERS)]
    )
    unranked = Ranking({key: SITE - n for n, key in enumerate(USERS) if n != 0}, SITE - 1)
    assert not whole_without_previous(inactive, unranked, previous(0), SITE, PREVIOUS)
