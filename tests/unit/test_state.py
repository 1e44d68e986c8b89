"""The site state's plain representation: comma lists as associations hold queues and projects."""

from ledger.state import csv_items


def test_a_comma_list_drops_blanks_and_empty_items() -> None:
    assert csv_items(" gold, ,silver ,,") == ["gold", "silver"]
    assert csv_items("*") == ["*"]
    assert csv_items("") == []
    assert csv_items(" , ") == []
