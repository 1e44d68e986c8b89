"""bank-info: flux-accounting's sshare-like view, byte for byte, on both stores.

Expected values are worked by hand from the tree's shares and usage (small_no_tie: root 1000
shares and 133 usage; account1 1000/121, account2 100/11, account3 10/1; their users as in
flux-accounting's weighted_tree vectors) and the fair-share its table 6.1 gives."""

from __future__ import annotations

import pytest

from ledger.usecases import bank_info as bank_info_usecase
from tests.cli.sites import flux_account_ledger
from tests.cli.test_fairshare_vectors import UPDATE_AT, build
from tests.conftest import Store, create_ledger, refusal

SMALL_NO_TIE_TREE = """\
Name                     Shares  Norm Shares   Norm Usage   Level FS
root                       1000     1.000000     1.000000        inf
 account1                  1000     0.900901     0.909774         --
   leaf.1.1               10000     0.081162     0.751880      0.286
   leaf.1.2                1000     0.008116     0.082707      0.143
   leaf.1.3              100000     0.811622     0.075188      0.429
 account2                   100     0.090090     0.082707         --
   leaf.2.1              100000     0.081900     0.060150      0.714
   leaf.2.2               10000     0.008190     0.022556      0.571
 account3                    10     0.009009     0.007519         --
   leaf.3.1                 100     0.008190     0.000000      1.000
   leaf.3.2                  10     0.000819     0.007519      0.857
"""


def test_tree_with_normalised_shares_and_usage(store: Store) -> None:
    build(store, "small_no_tie")
    assert store.run("bank-info", "-t", "root", now=UPDATE_AT).stdout == SMALL_NO_TIE_TREE


def test_verbose_parsable_and_no_header(store: Store) -> None:
    build(store, "small_no_tie")
    out = store.run("bank-info", "-t", "account2", "-v", "-P", now=UPDATE_AT).stdout
    assert out == (
        "Name|Shares|Norm_Shares|Usage|Norm_Usage|Norm_FS|Type\n"
        " account2|100|0.090090|11.0|0.082707|nan|Bank\n"
        "   leaf.2.1|100000|0.081900|8.0|0.060150|0.714286|User\n"
        "   leaf.2.2|10000|0.008190|3.0|0.022556|0.571429|User\n"
    )
    verbose = store.run("bank-info", "-r", "account3", "-v", "-n", now=UPDATE_AT).stdout
    assert verbose == (
        "root                       1000     1.000000         133.0     1.000000        inf  Bank\n"
        " account3                    10     0.009009           1.0     0.007519         --  Bank\n"
    )


def test_tree_without_users_and_exclude(store: Store) -> None:
    build(store, "small_no_tie")
    out = store.run("bank-info", "-T", "root", "-x", "account2", "-P", now=UPDATE_AT).stdout
    assert out == (
        "Name|Shares|Norm_Shares|Norm_Usage|Norm_FS\n"
        "root|1000|1.000000|1.000000|inf\n"
        " account1|1000|0.900901|0.909774|--\n"
        " account3|10|0.009009|0.007519|--\n"
    )


def test_user_paths_mark_the_default_bank(store: Store) -> None:
    # flux-accounting's t1096 hierarchy: root with A, B, C at 1 share each; a user in A and C.
    create_ledger(store)
    store.run("add-bank", "root", "1")
    for bank in "ABC":
        store.run("add-bank", bank, "1", "--parent-bank", "root")
    store.run("add-user", "-u", "me", "-i", "5000", "-B", "A")
    store.run("add-user", "-u", "user1", "-i", "50001", "-B", "A")
    store.run("add-user", "-u", "user2", "-i", "50002", "-B", "B")
    store.run("add-user", "-u", "me", "-i", "5000", "-B", "C")
    out = store.run("bank-info", "-u", "me", "-P").stdout
    assert out == (
        "Name|Shares|Norm_Shares|Norm_Usage|Norm_FS\n"
        "root|1|1.000000|1.000000|inf\n"
        " A*|1|0.333333|0.000000|--\n"
        "   me|1|0.166667|0.000000|0.500\n"  # t1096: "me|1|0.166667|0.000000|0.500"
        "root|1|1.000000|1.000000|inf\n"
        " C|1|0.333333|0.000000|--\n"
        "   me|1|0.333333|0.000000|0.500\n"
    )
    # A path through an excluded bank is left out whole.
    excluded = store.run("bank-info", "-u", "me", "-x", "A", "-n", "-P").stdout
    assert (
        excluded == "root|1|1.000000|1.000000|inf\n"
        " C|1|0.333333|0.000000|--\n"
        "   me|1|0.333333|0.000000|0.500\n"
    )


def test_default_is_the_caller_not_a_service(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    flux_account_ledger(store)
    monkeypatch.setattr(bank_info_usecase, "caller_username", lambda: "user5013")
    assert store.run("bank-info", "-P", "-n").stdout == (
        "root|1|1.000000|1.000000|inf\n"
        " B*|1|0.250000|0.000000|--\n"
        "   user5013|1|0.250000|0.000000|0.500\n"
    )


def test_inactive_rows_are_shown_and_counted(store: Store) -> None:
    flux_account_ledger(store)
    store.run("delete-user", "user5012", "A")
    out = store.run("bank-info", "-t", "A", "-P", "-n").stdout
    assert out == (
        " A|1|0.250000|0.000000|--\n"
        "   user5011|1|0.125000|0.000000|0.500\n"
        "   user5012|1|0.125000|0.000000|0.500\n"
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["-t", "foo"], 1, refusal("bank-info", 'Could not find "foo"')),
        (["-u", "nobody"], 1, refusal("bank-info", 'Could not find "nobody"')),
        (["-u", "A"], 1, refusal("bank-info", 'Could not find "A"')),  # a bank is not a user
        (["-t"], 2, "fairledger bank-info: error: argument -t/--tree: expected one argument\n"),
        (["-t", "A", "-r", "B"], 2, "argument -r/--to-root: not allowed with argument -t/--tree"),
    ],
)
def test_errors(store: Store, args: list[str], code: int, message: str) -> None:
    flux_account_ledger(store)
    result = store.run("bank-info", *args, expect=code)
    assert result.stdout == ""
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_no_root_bank(store: Store) -> None:
    create_ledger(store)
    result = store.run("bank-info", "-t", "root", expect=1)
    assert result.stderr == refusal("bank-info", "No root bank found in bank_table")


def test_as_of(store: Store) -> None:
    flux_account_ledger(store)
    later = 1_700_000_000 + 100
    store.run("add-bank", "G", "3", "--parent-bank", "root", now=later)
    before = store.run("bank-info", "-T", "root", "-P", "-n", "--as-of", "1700000050", now=later)
    assert " A|1|0.250000|0.000000|--" in before.stdout
    assert " G" not in before.stdout
    after = store.run("bank-info", "-T", "root", "-P", "-n", now=later).stdout
    assert " A|1|0.142857|0.000000|--\n" in after and " G|3|0.428571|0.000000|--\n" in after
