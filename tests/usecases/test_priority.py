"""priority and the payloads from the use cases themselves, on a real SQLite ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.errors import InvalidValue, NotFound, OutOfRange
from ledger.usecases import users
from ledger.usecases.priority import current_payloads, plugin_config, priority_of
from ledger.usecases.session import Session
from tests.usecases.ledgers import change, new_ledger


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Session]:
    """root -> A (priority 2), B; queue gold (priority 300); amy in A (default) and B."""
    session = new_ledger(tmp_path)
    change(session, lambda s, st: s.add_bank(st, "root", 1, "", None))
    change(session, lambda s, st: s.add_bank(st, "A", 1, "root", 2.0))
    change(session, lambda s, st: s.add_bank(st, "B", 1, "root", None))
    change(session, lambda s, st: s.add_queue(st, "gold", {"priority": 300}))
    users.add_user(session, "amy", "A", 5001, {"queues": "gold"})
    users.add_user(session, "amy", "B", None, {})
    change(session, lambda s, st: s.edit_factor(st, "bank", 10))
    yield session
    session.close()


def test_the_priority_factor_by_factor_in_the_default_bank(site: Session) -> None:
    answer = priority_of(site, "amy", queue="gold", urgency=20)
    assert (answer.bank, answer.queue, answer.urgency) == ("A", "gold", 20)
    assert [(f["factor"], f["value"], f["weight"], f["product"]) for f in answer.factors] == [
        ("fairshare", 0.5, 100000, 50000.0),  # a new association's fair-share
        ("queue", 300, 10000, 3000000),
        ("bank", 2.0, 10, 20.0),
        ("urgency", 4, 1000, 4000),
    ]
    assert answer.priority == 50000 + 3000000 + 20 + 4000


def test_another_bank_and_a_what_if_fairshare(site: Session) -> None:
    answer = priority_of(site, "amy", bank="B", fairshare=0.25)
    assert answer.bank == "B"
    assert answer.factors[0]["value"] == 0.25
    assert [f["value"] for f in answer.factors if f["factor"] == "bank"] == [0.0]


def test_bad_questions(site: Session) -> None:
    with pytest.raises(InvalidValue, match=r"invalid urgency: 32 \(must be 0..31\)"):
        priority_of(site, "amy", urgency=32)
    with pytest.raises(OutOfRange):
        priority_of(site, "amy", fairshare=1.5)
    with pytest.raises(NotFound, match="queue nope not found in queue_table"):
        priority_of(site, "amy", queue="nope")
    with pytest.raises(NotFound, match="user nobody not found in association_table"):
        priority_of(site, "nobody")


def test_the_payloads_and_the_plugin_config_agree(site: Session) -> None:
    sent = current_payloads(site)
    assert [a["bank"] for a in sent["rec_update"]["data"]] == ["A", "B"]
    config = plugin_config(site)
    assert config["associations"] == sent["rec_update"]["data"]
    assert [q["queue"] for q in config["queues"]] == ["gold"]
