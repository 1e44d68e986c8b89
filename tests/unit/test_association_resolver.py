"""Which association a job's identity (userid, username, bank as recorded) resolves to."""

from __future__ import annotations

from ledger.site_usage import AssociationResolver
from tests.unit.site_events import bank, given, user


def _resolver() -> AssociationResolver:
    site = given(
        bank("root"),
        bank("A", "root"),
        bank("B", "root"),
        user("alice", "A", userid=5001),
        user("alice", "B", userid=5001),
        user("bob", "A", userid=5002),
        user("carol", "B", userid=5003),
        user("dave", "A", userid=5003),  # carol's userid too: it names neither
    )
    return AssociationResolver(site.state)


def test_a_userid_one_user_holds_names_that_user_whatever_banks_they_have() -> None:
    resolver = _resolver()
    assert resolver.user_of_uid == {5001: "alice", 5002: "bob"}
    assert resolver.resolve(5001, None, "B") == ("alice", "B")
    assert resolver.resolve(5002, None, None) == ("bob", "A")  # the default bank


def test_a_userid_two_users_hold_resolves_to_no_one_but_a_username_still_does() -> None:
    resolver = _resolver()
    assert resolver.resolve(5003, None, "B") is None
    assert resolver.resolve(5003, "carol", "B") == ("carol", "B")
    assert resolver.resolve(5003, "dave", None) == ("dave", "A")
