"""The checks on a Slurm association given to Fair Tree or classic: each names the value."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ledger.errors import InvalidValue
from ledger.slurm_shares import SlurmAccount, SlurmUser

SHARES = "must be an integer in [0, 2147483647] (2147483647 = parent)"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SlurmUser("", "acct", 1, 0.0), "user must be a non-empty string, got ''"),
        (
            lambda: SlurmUser("alice", "", 1, 0.0),
            "account of user 'alice' must be a non-empty string, got ''",
        ),
        (
            lambda: SlurmUser("alice", "a/b", 1, 0.0),
            "account of user 'alice' must not contain '/', got 'a/b'",
        ),
        (
            lambda: SlurmUser("al{0}ce", "acct", -1, 0.0),
            f"shares of user (al{{0}}ce, acct) {SHARES}, got -1",
        ),
        (
            lambda: SlurmAccount("a", "", 1),
            "parent of account 'a' must be a non-empty string, got ''",
        ),
        (lambda: SlurmAccount("a", "root", True), f"shares of account 'a' {SHARES}, got True"),
    ],
)
def test_a_bad_association_is_refused_naming_its_value(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(InvalidValue) as refused:
        make()
    assert str(refused.value) == message


def test_a_good_association_is_built() -> None:
    assert SlurmUser("alice", "acct", 2147483647, 1.5).usage == 1.5
    assert SlurmAccount("acct", "root", 0).parent == "root"
