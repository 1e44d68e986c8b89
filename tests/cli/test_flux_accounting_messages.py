"""Refusals whose words flux-accounting's sharness tests grep (t1065, t1009), on both stores.

The expected texts are flux-accounting's (jobs_table_subcommands.py's duration expressions,
db_info_subcommands.py's pop-db table check), not fairledger's own output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Store, create_ledger


@pytest.mark.parametrize(
    ("expression", "refusal"),
    [
        # t1065: checked in this order, the count of parts first.
        ("foo 60", "expression must start with <, <=, =, >=, or >"),
        ("< 60 120", "expression expects one operator and one value"),
        ("< foo", "expression expects to be compared with a number"),
        (
            r"<60;DROP\nTABLE\n\IF\nEXISTS\njobs;< 50",
            "expression must start with <, <=, =, >=, or >",
        ),
    ],
)
@pytest.mark.parametrize("option", ["-d", "-e", "-D"])
def test_a_bad_duration_expression_is_refused_in_their_words(
    store: Store, option: str, expression: str, refusal: str
) -> None:
    create_ledger(store)
    before = store.log_position()
    result = store.run("view-job-records", option, expression, expect=2)
    assert result.stdout == ""
    assert refusal in result.stderr.splitlines()[-1]
    assert "Traceback" not in result.stderr
    assert store.log_position() == before


def test_good_expressions_still_filter(store: Store) -> None:
    create_ledger(store)
    # No jobs: every well-formed filter is accepted and finds nothing.
    for option, expression in [("-d", "< 60"), ("-e", ">= 1"), ("-D", "= 0")]:
        result = store.run("view-job-records", option, expression)
        assert result.stderr == ""


def test_pop_db_names_a_table_that_does_not_exist(store: Store, tmp_path: Path) -> None:
    """t1009: `touch foo.csv; flux account pop-db -c foo.csv` greps this line."""
    create_ledger(store)
    before = store.log_position()
    bad = tmp_path / "foo.csv"
    bad.touch()
    result = store.run("pop-db", "-c", str(bad), expect=1)
    assert result.stdout == ""
    assert result.stderr.startswith(
        'fairledger: pop-db: ValueError: pop-db: table "foo" does not exist in the database'
    )
    assert len(result.stderr.splitlines()) == 1
    assert store.log_position() == before
