"""The CPUs a command may give helpers: a look at the runnable tasks that sees none is believed
at once; one that sees some is checked against the CPUs' idle time over a short window, so that
a moment of other work is looked through and work that stays is counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger import machine

MINE = {0, 1}


def machine_showing(
    monkeypatch: pytest.MonkeyPatch, runnable: list[int], times: list[tuple[int, int] | None]
) -> list[float]:
    """Other runnable tasks as /proc/loadavg would show them, one count a look, and the
    (idle, all) ticks /proc/stat would show for this process's CPUs, one pair a reading; the
    sleeps taken are returned."""
    looks: Iterator[int] = iter(runnable)
    readings: Iterator[tuple[int, int] | None] = iter(times)
    slept: list[float] = []
    monkeypatch.setattr(machine, "_other_runnable", lambda: next(looks))
    monkeypatch.setattr(machine, "_cpu_times", lambda cpus: next(readings))
    monkeypatch.setattr(machine.os, "sched_getaffinity", lambda pid: MINE)
    monkeypatch.setattr(machine.time, "sleep", slept.append)
    return slept


def test_an_idle_machine_is_believed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    slept = machine_showing(monkeypatch, [0], [])
    assert machine.idle_cpus() == 2
    assert slept == []


def test_a_moment_of_other_work_is_looked_through(monkeypatch: pytest.MonkeyPatch) -> None:
    # A task seen runnable, but over the window the two CPUs were idle 9 ticks of 10.
    slept = machine_showing(monkeypatch, [1], [(100, 200), (109, 210)])
    assert machine.idle_cpus() == 2
    assert slept == [machine.IDLE_WINDOW]


@pytest.mark.parametrize(
    ("idle_ticks", "expected"), [(0, 0), (2, 0), (3, 1), (5, 1), (7, 1), (8, 2), (10, 2)]
)
def test_work_that_stays_is_counted_to_the_nearest_cpu(
    monkeypatch: pytest.MonkeyPatch, idle_ticks: int, expected: int
) -> None:
    machine_showing(monkeypatch, [2], [(100, 200), (100 + idle_ticks, 210)])
    assert machine.idle_cpus() == expected


def test_without_the_cpus_times_the_one_look_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    machine_showing(monkeypatch, [1], [None, None])
    assert machine.idle_cpus() == 1
    machine_showing(monkeypatch, [3], [None, None])
    assert machine.idle_cpus() == 0  # never below none


def test_only_this_processs_cpus_are_read() -> None:
    """/proc/stat's lines of the CPUs asked for alone, idle and I/O wait counted idle."""
    lines = [
        "cpu  900 0 100 1000 50 0 0 0 0 0",
        "cpu0 10 0 10 70 10 0 0 0 0 0",
        "cpu1 20 0 0 80 0 0 0 0 0 0",
        "cpu2 500 0 0 0 0 0 0 0 0 0",
        "intr 12345",
    ]
    assert machine.cpu_times_of(lines, [0, 1]) == (160, 200)
    assert machine.cpu_times_of(lines, [2]) == (0, 500)
    assert machine.cpu_times_of(lines, [7]) is None
