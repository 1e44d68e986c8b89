"""The bench's caption says how much of the CPUs' time the hypervisor took during a run, read
from /proc/stat's "cpu" line: runs on a machine that loses a tenth of its CPUs to a neighbour
must not be compared with a quiet one's unawares."""

from __future__ import annotations

from bench.busy import stolen_and_total_ticks, stolen_share_text

STAT = """cpu  120800 19560 31131 181124 1810 0 7783 30818 0 0
cpu0 60000 9000 15000 90000 900 0 3000 15000 0 0
cpu1 60800 10560 16131 91124 910 0 4783 15818 0 0
intr 1 2 3
"""


def test_steal_and_all_ticks_come_from_the_cpu_line() -> None:
    assert stolen_and_total_ticks(STAT.splitlines()) == (
        30818,
        120800 + 19560 + 31131 + 181124 + 1810 + 0 + 7783 + 30818,
    )


def test_no_cpu_line_reads_as_none() -> None:
    assert stolen_and_total_ticks(["cpu0 1 2 3 4 5 6 7 8 0 0", "intr 1"]) is None


def test_the_share_is_of_the_ticks_between_the_two_readings() -> None:
    text = stolen_share_text((1000, 10_000), (1900, 20_000))
    assert "9.0 % of the CPUs' time" in text


def test_an_unreadable_reading_says_so() -> None:
    assert "could not be read" in stolen_share_text(None, (1, 2))
    assert "could not be read" in stolen_share_text((1, 2), (1, 2))
