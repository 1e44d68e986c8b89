"""The bench's CPU split of an ingest: what the command and the rest of the machine took per
job, and the rate that CPU allows when every CPU is kept busy."""

import io
import os
import subprocess
import sys
import textwrap

import pytest
from rich.console import Console

import bench.run
from bench.process_cpu import OwnCpu
from bench.run import Step, cpu_per_job


def step(cpu: float, machine_cpu: float, own_cpu: float | None = None, wall: float = 1.0) -> Step:
    return Step(
        "ingest",
        wall=wall,
        rss_kib=None,
        stdout="",
        stderr="",
        cpu=cpu,
        machine_cpu=machine_cpu,
        own_cpu=own_cpu,
    )


def test_the_rest_of_the_machine_is_its_busy_time_less_the_commands() -> None:
    # 200,000 jobs in two runs: 6.05 s of the command's CPU, 9.25 s of the machine's busy time,
    # 46.25 µs a job: 2 CPUs allow 2 / 46.25 µs = 43,243 jobs/s.
    steps = [step(3.0, 4.5), step(3.05, 4.75)]
    assert cpu_per_job(steps, 200_000, 2) == "30.2 + 16.0 µs (≤ 43,243 jobs/s on 2 CPUs)"


def test_a_machine_that_was_busier_than_the_command_never_gives_a_negative_rest() -> None:
    # /proc/stat ticks are coarser than rusage: the machine can read less than the command.
    assert cpu_per_job([step(1.0, 0.99)], 100_000, 2) == (
        "10.0 + 0.0 µs (≤ 200,000 jobs/s on 2 CPUs)"
    )


def test_the_commands_cpu_splits_into_its_process_and_helpers_and_the_chain_meets_the_wall() -> (
    None
):
    # 100,000 jobs in 3 s: the command 3.0 s of CPU, 1.1 s of it its own process; the machine
    # 4.6 s busy. The process and the rest (its server) took 27 µs a job of a 30 µs wall.
    assert cpu_per_job([step(3.0, 4.6, own_cpu=1.1, wall=3.0)], 100_000, 2) == (
        "11.0 (its process) + 19.0 (its helpers) + 16.0 µs (≤ 43,478 jobs/s on 2 CPUs); "
        "the process and the rest: 27.0 µs against a wall of 30.0 µs"
    )


def test_a_run_whose_process_was_not_read_gives_the_commands_cpu_whole() -> None:
    steps = [step(3.0, 4.5, own_cpu=1.0), step(3.05, 4.75)]
    assert cpu_per_job(steps, 200_000, 2) == "30.2 + 16.0 µs (≤ 43,243 jobs/s on 2 CPUs)"


# A process that burns CPU itself, then starts a child that burns more, waits for it, and
# sleeps (so that the last reading comes after all its work); it prints its own CPU time.
_BURNER = textwrap.dedent(
    """
    import subprocess, sys, time
    def burn(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
    burn(0.3)
    subprocess.run([sys.executable, "-c", sys.argv[1]], check=True)
    print(time.process_time(), flush=True)
    time.sleep(0.5)
    """
)
_CHILD = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"


@pytest.mark.parametrize("wrapped", [False, True], ids=["alone", "under-a-parent"])
def test_a_commands_own_cpu_leaves_its_helpers_out(wrapped: bool) -> None:
    command = [sys.executable, "-c", _BURNER, _CHILD]
    if wrapped:  # as /usr/bin/time runs it: the command is the first child
        command = [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])"] + (
            command
        )
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    own = OwnCpu(proc.pid, wrapped=wrapped).start()
    out, _ = proc.communicate()
    seen = own.stop()
    assert seen is not None
    # Its own 0.3 s and its start-up, read to the clock tick; not the child's 0.6 s.
    assert abs(seen - float(out)) <= 0.05
    assert seen < 0.6


def test_the_reference_loop_runs_pinned_to_each_cpu_in_turn_and_the_process_is_set_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    allowed = os.sched_getaffinity(0)
    seen: list[set[int]] = []

    def loop() -> float:
        seen.append(os.sched_getaffinity(0))
        return 0.25

    monkeypatch.setattr(bench.run, "_reference_loop", loop)
    assert bench.run.reference_loops() == dict.fromkeys(sorted(allowed), 0.25)
    assert seen == [{cpu} for cpu in sorted(allowed)]
    assert os.sched_getaffinity(0) == allowed


def test_the_caption_gives_each_cpus_loop_before_and_after_the_run() -> None:
    assert bench.run.loops_text({0: 0.244, 1: 0.171}, {0: 0.5, 1: 0.55}) == (
        "This machine's CPython: a 10,000,000-step loop (the fastest of 3 on each CPU) took "
        "CPU 0 0.24 s, CPU 1 0.17 s before the run and CPU 0 0.50 s, CPU 1 0.55 s after it; "
        "compare it before comparing figures of two runs or two machines."
    )
    assert bench.run.loops_text({-1: 0.38}, {-1: 0.4}).startswith(
        "This machine's CPython: a 10,000,000-step loop (the fastest of 3 on each CPU) took "
        "0.38 s (on no CPU in particular) before the run and 0.40 s (on no CPU in particular) "
        "after it;"
    )


def test_where_a_cpu_cannot_be_pinned_the_loop_runs_once_unpinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("needs two CPUs: the first pinned, the second refused")
    pin = os.sched_setaffinity
    seen: list[set[int]] = []

    def refuse_one_cpu(pid: int, cpus: set[int]) -> None:
        if set(cpus) == {max(allowed)}:  # after the first CPU was pinned and measured
            raise PermissionError("pinning refused")
        pin(pid, cpus)

    def loop() -> float:
        seen.append(os.sched_getaffinity(0))
        return 0.4

    monkeypatch.setattr(os, "sched_setaffinity", refuse_one_cpu)
    monkeypatch.setattr(bench.run, "_reference_loop", loop)
    assert bench.run.reference_loops() == {-1: 0.4}
    # The first CPU's loop, then the unpinned one, once the process was free again.
    assert seen == [{min(allowed)}, allowed]


def test_the_reports_150_columns_show_every_measures_label_and_values_whole() -> None:
    # The measure column is not wrapped: a label too long squeezes the stores' columns to
    # nothing, and the report, written 150 columns wide, then shows no figure at all.
    results = [bench.run.StoreResult("sqlite"), bench.run.StoreResult("postgres")]
    rows = bench.run.rows(1_000_000, 10_000, 10_000)
    for result in results:
        for key, _label, _target in rows:
            result.add(key, "123,456 jobs/s")
    buffer = io.StringIO()
    Console(file=buffer, width=150, no_color=True).print(
        bench.run.make_table(results, 1_000_000, 10_000, 10_000, "")
    )
    shown = buffer.getvalue()
    assert shown.count("123,456 jobs/s") == 2 * len(rows)
    assert all(label in shown for _key, label, _target in rows)
