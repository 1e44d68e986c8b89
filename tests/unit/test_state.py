"""The site state's plain representation: comma lists as associations hold queues and projects."""

from ledger.site_config import csv_items
from ledger.state import copy_for_markers, copy_state, state_to_dict
from tests.unit.site_events import STAMP, T0, Command, flux_account_tree, given, queue, user


def test_a_comma_list_drops_blanks_and_empty_items() -> None:
    assert csv_items(" gold, ,silver ,,") == ["gold", "silver"]
    assert csv_items("*") == ["*"]
    assert csv_items("") == []
    assert csv_items(" , ") == []


# --- copy_state: the projector folds a command's events onto a copy taken before it ----------


def _changes() -> list[Command]:
    """Commands that change every part of the state in place: fields of banks, associations,
    queues and QOS, the dicts of each, the config, the default banks and the update marks."""
    return [
        lambda s, st: s.edit_bank(st, "A", shares=5, priority=2.0),
        lambda s, st: s.edit_user(st, "user5011", "A", {"shares": 7, "max_running_jobs": 3}),
        lambda s, st: s.edit_user(st, "user5013", None, {"default_bank": "C"}),
        lambda s, st: s.delete_user(st, "user5012", "A", False),
        lambda s, st: s.edit_queue(st, "batch", {"priority": 9}),
        lambda s, st: s.edit_qos(st, "high", {"priority": 8}),
        lambda s, st: s.add_project(st, "climate"),
        lambda s, st: s.edit_config(st, [("fairshare_algorithm", "fair-tree")]),
        lambda s, st: s.clear_usage(st, "B", float(T0 + 60)),
        lambda s, st: s.mark_fairshare_updated(st),
    ]


def test_a_copy_of_the_state_is_untouched_by_what_later_changes_the_original() -> None:
    site = given(
        *flux_account_tree(),
        user("user5013", "C", 5013),
        queue("batch"),
        lambda s, st: s.add_qos(st, "high", {}),
    )
    before = state_to_dict(site.state)
    copied = copy_state(site.state)
    assert state_to_dict(copied) == before
    for change in _changes():
        change(site, STAMP)
    assert state_to_dict(site.state) != before  # the changes took, on the original only
    assert state_to_dict(copied) == before


def test_changing_the_copy_leaves_the_original_as_it_was() -> None:
    site = given(*flux_account_tree(), queue("batch"), lambda s, st: s.add_qos(st, "high", {}))
    before = state_to_dict(site.state)
    twin = given(*flux_account_tree(), queue("batch"), lambda s, st: s.add_qos(st, "high", {}))
    twin.state = copy_state(site.state)
    for change in _changes()[:2] + _changes()[4:]:  # user5013 is not in C here
        change(twin, STAMP)
    assert state_to_dict(site.state) == before


# --- copy_for_markers: a command that records markers alone shares the state's tables ---------


def test_a_copy_for_markers_keeps_its_update_times_and_shares_the_tables() -> None:
    site = given(*flux_account_tree(), queue("batch"))
    before = state_to_dict(site.state)
    copied = copy_for_markers(site.state)
    site.mark_usage_updated(STAMP)
    site.mark_fairshare_updated(STAMP)
    assert state_to_dict(site.state) != before  # the markers took, on the original only
    assert state_to_dict(copied) == before
    assert copied.associations is site.state.associations  # shared, not copied
    assert copied.banks is site.state.banks
