"""The bench's CPU split of an ingest: what the command and the rest of the machine took per
job, and the rate that CPU allows when every CPU is kept busy."""

from bench.run import Step, cpu_per_job


def step(cpu: float, machine_cpu: float) -> Step:
    return Step(
        "ingest", wall=1.0, rss_kib=None, stdout="", stderr="", cpu=cpu, machine_cpu=machine_cpu
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
