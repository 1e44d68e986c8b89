"""A session and an ingest helper raise the collector's first threshold for their process, and
never lower it; a command's session leaves the Site it loaded out of the collections until it
closes; an update under the periods model runs with the collector paused."""

from __future__ import annotations

import gc
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.collector import YOUNG_COLLECTION_THRESHOLD, collect_less, paused
from ledger.usecases import validation
from ledger.usecases.cron import cron
from ledger.usecases.session import Session
from projections.writers import usage_tables
from tests.conftest import T0
from tests.usecases.ledgers import change, ended, new_ledger, record


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


def test_paused_collects_nothing_inside_and_restores_the_collector() -> None:
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():  # nested: the outer block's pause stays
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()  # disabled before: left so
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("algorithm", "paused_inside"), [("weighted-walk", True), ("fair-tree", False)]
)
def test_an_update_is_planned_with_the_collector_paused_unless_it_may_read_every_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algorithm: str, paused_inside: bool
) -> None:
    """Under the periods model an update's work is a row per association; under the
    continuous model (Fair Tree) it may read every job, so the collector runs as usual."""
    enabled: list[bool] = []
    plan = usage_tables.plan_usage

    def spied(*args: Any, **kwargs: Any) -> Any:
        enabled.append(gc.isenabled())
        return plan(*args, **kwargs)

    monkeypatch.setattr(usage_tables, "plan_usage", spied)
    session = new_ledger(tmp_path)
    try:

        def site(site: Any, stamp: Any) -> None:
            site.add_bank(stamp, "root", 1, "", None)
            site.add_user(stamp, "alice", "root", 5001, {})
            site.edit_config(stamp, [("fairshare_algorithm", algorithm)])

        change(session, site)
        record(session, ended(1, 5001, T0 + 50, 30))
        cron(session)
    finally:
        session.close()
    assert enabled and all(e is not paused_inside for e in enabled)
    assert gc.isenabled()
