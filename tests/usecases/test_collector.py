"""A session raises the collector's first threshold for its process, and never lowers it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.usecases.session import YOUNG_COLLECTION_THRESHOLD, Session, collect_less


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
