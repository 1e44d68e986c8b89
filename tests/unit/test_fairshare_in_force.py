"""The fair-share in force (ledger.fairshare_in_force) and the walk's ranks, in memory: the rules
the projector and time travel share, tested once here rather than through both stores."""

from __future__ import annotations

from ledger.fairshare import BankNode, Ranking, UserLeaf, compute_fairshare, rank_associations
from ledger.fairshare_in_force import (
    NEW_ASSOCIATION_FAIRSHARE,
    Given,
    InForce,
    Kept,
    carried_over,
    in_force,
    shown_after_walk,
)
from ledger.site_usage import AssociationUsage, AssocKey
from ledger.state import Association, Bank, SiteState
from projections.writers.checkpoints import Entry, entries

ALICE, BOB = ("alice", "A"), ("bob", "A")


def site(*associations: tuple[str, str, float, bool]) -> SiteState:
    """A site with bank A under root and (username, bank, creation_time, active) associations."""
    state = SiteState()
    state.banks = {"root": Bank(1, "root", "", 1), "A": Bank(2, "A", "root", 1)}
    for username, bank, created, active in associations:
        state.associations.setdefault(username, {})[bank] = Association(
            username=username,
            bank=bank,
            userid=1000 + len(state.associations),
            creation_time=created,
            mod_time=created,
            active=active,
        )
    return state


# --- the walk's ranks -----------------------------------------------------------------------------
def test_ranks_count_down_from_n_and_ties_share_the_higher() -> None:
    users = tuple(UserLeaf(name, "root", 1, 10.0) for name in "abc") + (
        UserLeaf("d", "root", 1, 20.0),
    )
    ranking = rank_associations(BankNode("root", 1, users=users))
    assert ranking.ranked_of == 4
    assert ranking.ranks == {("a", "root"): 4, ("b", "root"): 4, ("c", "root"): 4, ("d", "root"): 1}
    assert ranking.fairshare() == {
        ("a", "root"): 1.0,
        ("b", "root"): 1.0,
        ("c", "root"): 1.0,
        ("d", "root"): 0.25,
    }


def test_the_fairshare_is_the_rank_over_n_rounded_to_six_decimals() -> None:
    users = tuple(UserLeaf(f"u{i}", "root", 1, float(i + 1)) for i in range(7))
    tree = BankNode("root", 1, users=users)
    ranking = rank_associations(tree)
    assert compute_fairshare(tree) == {k: round(r / 7, 6) for k, r in ranking.ranks.items()}
    assert sorted(ranking.ranks.values()) == list(range(1, 8))


def test_a_tree_without_users_ranks_no_one() -> None:
    assert rank_associations(BankNode("root", 1)) == Ranking({}, 0)


def test_a_checkpoint_keeps_the_walks_ranks_where_rounding_merges_two_values() -> None:
    # Out of three million, ranks 1,500,000 and 1,499,999 both round to 0.5: a rank read back
    # from the rounded values would tie them.
    ranking = Ranking({ALICE: 1_500_000, BOB: 1_499_999}, 3_000_000)
    assert ranking.fairshare()[ALICE] == ranking.fairshare()[BOB]
    state = site(("alice", "A", 1.0, True), ("bob", "A", 1.0, True))
    usage = {key: AssociationUsage(0.0, []) for key in (ALICE, BOB)}
    got = entries(state, 7, usage, ranking, {})
    assert (got[ALICE].rank, got[BOB].rank) == (1_500_000, 1_499_999)
    assert got[ALICE].ranked_of == 3_000_000


# --- what a walk leaves ---------------------------------------------------------------------------
def after_walk(
    state: SiteState, position: int, ranking: Ranking, before: dict[AssocKey, Entry]
) -> dict[AssocKey, Entry]:
    """The checkpoint the walk at `position` leaves (the projector's own: entries), usage aside."""
    usage = {(a.username, a.bank): AssociationUsage(0.0, []) for a in state.all_associations()}
    return entries(state, position, usage, ranking, before)


def kept(entry: Given) -> Kept:
    return Kept(entry.creation_time, entry.fairshare, entry.source)


def test_a_walk_gives_the_associations_it_ranks_its_value_and_position() -> None:
    state = site(("alice", "A", 1.0, True), ("bob", "A", 1.0, True))
    after = after_walk(state, 9, Ranking({ALICE: 2, BOB: 1}, 2), {})
    assert kept(after[ALICE]) == Kept(1.0, 1.0, 9)
    assert kept(after[BOB]) == Kept(1.0, 0.5, 9)


def test_an_association_never_ranked_has_the_new_association_value() -> None:
    state = site(("alice", "A", 1.0, True), ("bob", "A", 5.0, False))
    after = after_walk(state, 9, Ranking({ALICE: 1}, 1), {})
    assert kept(after[BOB]) == Kept(5.0, NEW_ASSOCIATION_FAIRSHARE, None)
    assert NEW_ASSOCIATION_FAIRSHARE == 0.5  # flux-accounting's column default


def test_an_inactive_association_keeps_the_last_walks_value_through_later_walks() -> None:
    first = after_walk(
        site(("alice", "A", 1.0, True), ("bob", "A", 1.0, True)),
        4,
        Ranking({ALICE: 1, BOB: 2}, 2),
        {},
    )
    bob_inactive = site(("alice", "A", 1.0, True), ("bob", "A", 1.0, False))
    second = after_walk(bob_inactive, 8, Ranking({ALICE: 1}, 1), first)
    third = after_walk(bob_inactive, 12, Ranking({ALICE: 1}, 1), second)
    assert kept(third[BOB]) == Kept(1.0, 1.0, 4)  # the value and the walk of position 4
    assert kept(third[ALICE]) == Kept(1.0, 1.0, 12)
    assert third[BOB].rank is None and third[ALICE].rank == 1


def test_a_re_added_association_is_new_again() -> None:
    before = {BOB: Kept(1.0, 1.0, 4)}
    assert carried_over(before[BOB], 1.0) == before[BOB]
    assert carried_over(before[BOB], 2.0) == Kept(2.0, NEW_ASSOCIATION_FAIRSHARE, None)
    assert carried_over(None, 2.0) == Kept(2.0, NEW_ASSOCIATION_FAIRSHARE, None)


def test_a_row_shows_the_walks_value_else_the_one_it_showed() -> None:
    assert shown_after_walk(0.25, 0.75) == 0.25
    assert shown_after_walk(None, 0.75) == 0.75
    assert shown_after_walk(None, None) == NEW_ASSOCIATION_FAIRSHARE


# --- the value in force ---------------------------------------------------------------------------
def test_before_any_walk_or_balance_the_new_association_value_is_in_force() -> None:
    assert in_force(None, 0, None) == InForce(NEW_ASSOCIATION_FAIRSHARE, None, None)
    assert in_force(Kept(1.0, 0.5, None), 6, None) == InForce(0.5, None, None)


def test_the_value_the_last_ranking_walk_gave_is_in_force() -> None:
    assert in_force(Kept(1.0, 0.25, 4), 8, None) == InForce(0.25, 4, None)


def test_an_opening_balance_wins_until_a_walk_after_it_ranks_the_association() -> None:
    ranked = Kept(1.0, 0.25, 8)
    assert in_force(ranked, 8, (10, 0.9)) == InForce(0.9, None, 10)  # balance after the walk
    assert in_force(ranked, 8, (3, 0.9)) == InForce(0.25, 8, None)  # a walk after the balance
    # Never ranked: the balance holds however old it is.
    assert in_force(Kept(1.0, 0.5, None), 8, (3, 0.9)) == InForce(0.9, None, 3)
    assert in_force(None, 8, (3, 0.9)) == InForce(0.9, None, 3)
