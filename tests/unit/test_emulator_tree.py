"""export-db -F's tree, from rows: flux-accounting's layout for fairshare-emulate."""

from __future__ import annotations

import pytest

from ledger.errors import NotFound
from ledger.flux_accounting.emulator_tree import emulator_tree


def bank(name: str, parent: str, shares: int = 1, usage: float = 0.0) -> dict[str, object]:
    return {"bank": name, "parent_bank": parent, "shares": shares, "job_usage": usage}


def user(name: str, in_bank: str, shares: int = 1, usage: float = 0.0) -> dict[str, object]:
    return {"username": name, "bank": in_bank, "shares": shares, "job_usage": usage}


def test_children_nest_under_their_parents_whatever_the_row_order() -> None:
    banks = [bank("B", "A", 3, 7.0), bank("root", "", 1, 7.0), bank("A", "root", 2, 7.0)]
    tree = emulator_tree(banks, [user("u1", "B", 5, 7), user("u2", "B")])
    assert tree == {
        "root": {
            "bank": "root",
            "shares": 1,
            "usage": 7.0,
            "children": [
                {
                    "bank": "A",
                    "shares": 2,
                    "usage": 7.0,
                    "children": [
                        {
                            "bank": "B",
                            "shares": 3,
                            "usage": 7.0,
                            "children": [
                                {"username": "u1", "shares": 5, "usage": 7.0},
                                {"username": "u2", "shares": 1, "usage": 0.0},
                            ],
                        }
                    ],
                }
            ],
        }
    }
    assert isinstance(tree["root"]["children"][0]["children"][0]["children"][0]["usage"], float)


def test_rows_of_unknown_banks_are_left_out_and_no_root_is_an_error() -> None:
    tree = emulator_tree([bank("root", "")], [user("ghost", "gone")])
    assert tree["root"]["children"] == []
    with pytest.raises(NotFound, match="No root bank found in database"):
        emulator_tree([bank("A", "root")], [])
