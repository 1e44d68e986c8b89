"""show-usage: flux-accounting's bar chart (its t1012 and t1058 data), on both stores."""

from __future__ import annotations

import json

import pytest

from tests.conftest import T0, Store, create_ledger, refusal

JOB_END = T0 + 5000
CHART_AT = T0 + 6000
USAGE = {("user1", "A"): 5, ("user2", "A"): 14, ("user3", "B"): 7, ("user4", "B"): 45}
USAGE[("user5", "C")] = 23


def site_with_usage(store: Store) -> None:
    """flux-accounting's t1012: usage 5, 14, 7, 45, 23 (banks A 19, B 52, C 23), each from one
    one-node job as long as the usage, in the ledger's first period (no decay yet)."""
    create_ledger(store)
    store.run("add-bank", "root", "1")
    for bank in "ABC":
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    jobs = []
    for n, ((user, bank), usage) in enumerate(USAGE.items()):
        store.run("add-user", "-u", user, "-i", str(5001 + n), "-B", bank)
        job = {"id": 100 + n, "userid": 5001 + n, "bank": bank, "nnodes": 1, "ncores": 1}
        jobs.append(job | {"t_run": JOB_END - usage, "t_inactive": JOB_END})
    store.run("ingest", "-", input="".join(json.dumps(j) + "\n" for j in jobs), now=JOB_END)
    store.run("update-usage", now=CHART_AT)


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # shutil.get_terminal_size reads it first


def test_associations_largest_first(store: Store) -> None:
    site_with_usage(store)
    # Labels padded to 9; 80 - (9 + 10 + len("45.00")) = 56 columns for the largest bar;
    # the others int(usage * 56 / 45): 28, 17, 8, 6.
    bar = "█"
    expected = [
        f"user4 / B | {bar * 56}  45.00",
        f"user5 / C | {bar * 28:<56}  23.00",
        f"user2 / A | {bar * 17:<56}  14.00",
        f"user3 / B | {bar * 8:<56}  7.00",
        f"user1 / A | {bar * 6:<56}  5.00",
    ]
    out = store.run("show-usage", "associations", now=CHART_AT).stdout
    assert out.splitlines() == expected
    assert out.endswith("5.00\n")


def test_banks_leave_the_root_out_and_limit(store: Store) -> None:
    site_with_usage(store)
    out = store.run("show-usage", "banks", now=CHART_AT).stdout
    # 80 - (1 + 10 + 5) = 64 columns; 23 and 19 of 52 give 28 and 23.
    assert out.splitlines() == [
        f"B | {'█' * 64}  52.00",
        f"C | {'█' * 28:<64}  23.00",
        f"A | {'█' * 23:<64}  19.00",
    ]
    one = store.run("show-usage", "banks", "--limit", "1", now=CHART_AT).stdout
    assert one == f"B | {'█' * 64}  52.00\n"


def test_no_data(store: Store) -> None:
    create_ledger(store)
    for table in ("associations", "banks"):
        assert store.run("show-usage", table).stdout == "no data to display\n"


def test_as_of_before_the_usage(store: Store) -> None:
    site_with_usage(store)
    before = store.run("show-usage", "associations", "-n", "1", "--as-of", str(T0), now=CHART_AT)
    assert before.stdout.splitlines()[0].endswith(" 0.00")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["foo"],
            2,
            "fairledger show-usage: error: argument table: invalid choice: 'foo' "
            "(choose from 'associations', 'banks')\n",
        ),
        (["banks", "-n", "x"], 2, "error: argument -n/--limit: invalid int value: 'x'\n"),
        (["banks", "-n", "-1"], 1, refusal("show-usage", "--limit must be 0 or more, got -1")),
    ],
)
def test_bad_arguments(store: Store, args: list[str], code: int, message: str) -> None:
    create_ledger(store)
    result = store.run("show-usage", *args, expect=code)
    assert message in result.stderr
    assert result.stdout == ""
