"""The CPUs a command may give helpers: a CPU that looks busy for a moment is looked at again,
one that stays busy is counted busy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger import machine


def runnable(monkeypatch: pytest.MonkeyPatch, counts: list[int]) -> list[int]:
    """Other runnable tasks as /proc/loadavg would show them, one count a look; the looks taken
    are recorded."""
    looks: list[int] = []
    seen: Iterator[int] = iter(counts)

    def other() -> int:
        looks.append(1)
        return next(seen)

    monkeypatch.setattr(machine, "_other_runnable", other)
    monkeypatch.setattr(machine.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(machine.time, "sleep", lambda seconds: None)
    return looks


def test_an_idle_machine_is_looked_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    looks = runnable(monkeypatch, [0])
    assert machine.idle_cpus() == 2
    assert len(looks) == 1


def test_a_moment_of_other_work_is_looked_through(monkeypatch: pytest.MonkeyPatch) -> None:
    looks = runnable(monkeypatch, [1, 1, 0])
    assert machine.idle_cpus() == 2
    assert len(looks) == 3


def test_work_that_stays_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    looks = runnable(monkeypatch, [3, 3, 2, 3, 3, 0])
    assert machine.idle_cpus() == 0  # the least busy of the five looks: 2 CPUs less 2 tasks
    assert len(looks) == machine.IDLE_SAMPLES
