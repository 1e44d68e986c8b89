"""A session and an ingest helper raise the collector's first threshold for their process, and
never lower it."""

from __future__ import annotations

import gc
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.usecases import validation
from ledger.usecases.collector import YOUNG_COLLECTION_THRESHOLD, collect_less
from ledger.usecases.session import Session


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
