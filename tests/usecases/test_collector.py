"""A session and an ingest helper raise the collector's first threshold for their process, and
never lower it; a command's session leaves the Site it loaded out of the collections until it
closes."""

from __future__ import annotations

import gc
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.usecases import validation
from ledger.usecases.collector import YOUNG_COLLECTION_THRESHOLD, collect_less
from ledger.usecases.session import Session
from tests.usecases.ledgers import change, new_ledger


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_a_session_collects_the_youngest_generation_less_often(tmp_path: Path) -> None:
    gc.set_threshold(700, 10, 10)
    Session(f"sqlite:///{tmp_path}/ledger.db", None)
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10)


def test_a_higher_threshold_is_kept() -> None:
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD * 2, 5, 3)
    collect_less()
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD * 2, 5, 3)


def test_an_ingest_helper_collects_the_youngest_generation_less_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A helper holds the site's state as a command does, and validates a piece at a time."""
    monkeypatch.setattr(validation.os, "nice", lambda _: 0)  # not this test's own process
    monkeypatch.setattr(validation.signal, "signal", lambda *_: None)
    monkeypatch.setattr(validation.sys, "stdin", io.TextIOWrapper(io.BytesIO()))  # no work
    monkeypatch.setattr(validation.sys, "stdout", io.TextIOWrapper(io.BytesIO()))
    gc.set_threshold(700, 10, 10)
    validation._serve()
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10)


def _tracked(obj: object) -> bool:
    """Whether the collector walks `obj` (gc.get_objects leaves out what gc.freeze set aside)."""
    return any(o is obj for o in gc.get_objects())


def test_a_command_sets_its_site_aside_from_the_collector_until_the_session_closes(
    tmp_path: Path,
) -> None:
    session = new_ledger(tmp_path)
    try:
        gc.unfreeze()  # whatever an earlier test left aside
        loaded = change(
            session, lambda site, stamp: site.add_bank(stamp, "root", 1, "", None) or site.state
        )
        assert gc.get_freeze_count() > 0
        assert not _tracked(loaded)
    finally:
        session.close()
    assert gc.get_freeze_count() == 0
    assert _tracked(loaded)
