"""A malformed command line is refused in argparse's words, as flux-accounting's sharness tests
grep them (t1007, t1051, t1055, t1058): `CMD: error: MESSAGE`, exit 2, nothing recorded.

The expected lines are argparse's messages for flux-accounting's parsers (its option strings,
short first, and positional names such as `shares`, `table`)."""

from __future__ import annotations

import pytest

from tests.conftest import Store, create_ledger


@pytest.mark.parametrize(
    ("args", "error"),
    [
        # t1007: add-user's two required options, each missing alone.
        (
            ["add-user", "--bank=A"],
            "add-user: error: the following arguments are required: -u/--username",
        ),
        (
            ["add-user", "--username=user5011"],
            "add-user: error: the following arguments are required: -B/--bank",
        ),
        # t1051: an option no command has, given with its value.
        (["list-users", "--foo=bar"], "list-users: error: unrecognized arguments: --foo=bar"),
        # t1055: a weight that is not an integer.
        (
            ["edit-factor", "--factor=fairshare", "--weight=foo"],
            "edit-factor: error: argument --weight: invalid int value: 'foo'",
        ),
        # t1058: bank-info's tree options without their bank.
        (["bank-info", "-t"], "bank-info: error: argument -t/--tree: expected one argument"),
        (
            ["bank-info", "-T"],
            "bank-info: error: argument -T/--tree-no-users: expected one argument",
        ),
        (["add-bank", "B", "1", "extra"], "add-bank: error: unrecognized arguments: extra"),
    ],
)
def test_usage_errors_in_argparse_words(store: Store, args: list[str], error: str) -> None:
    create_ledger(store)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    before = store.log_position()
    result = store.run(*args, expect=2)
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"fairledger {error}", result.stderr
    assert "Traceback" not in result.stderr
    assert store.log_position() == before
