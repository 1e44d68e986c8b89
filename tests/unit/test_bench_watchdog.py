"""The bench's watchdog: a step whose process tree takes no CPU for the stall window is killed
as hung, and one that works on is not, after its helper processes have ended too."""

import os
import subprocess
import sys
import textwrap

import bench.run
from bench.run import Cli

# Starts a child (_CHILD, its last argument) that burns `child` seconds of CPU and waits for it
# (so the child ends and is reaped), then burns `after` seconds itself, or sleeps them if
# `after` is negative.
_PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    def burn(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
    child, after = sys.argv[1], float(sys.argv[2])
    subprocess.run([sys.executable, "-c", sys.argv[3], child], check=True)
    print("reaped", flush=True)
    if after >= 0:
        burn(after)
    else:
        time.sleep(-after)
    """
)
# The child: burns argv[1] seconds of CPU.
_CHILD = textwrap.dedent(
    """
    import sys, time
    end = time.process_time() + float(sys.argv[1])
    while time.process_time() < end:
        pass
    """
)


def _start(child: float, after: float, stdout: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(child), str(after), _CHILD],
        stdout=stdout,
        start_new_session=True,  # as Cli.run starts a step: the watchdog kills its group
    )


def test_a_trees_cpu_keeps_what_its_ended_children_took() -> None:
    proc = _start(0.6, -1.0, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"reaped\n"
    ticks = bench.run._tree_cpu_ticks(proc.pid)
    proc.communicate()
    # The child's 0.6 s, though it has ended: its own reading is gone with it.
    assert ticks >= 0.55 * os.sysconf("SC_CLK_TCK")


def test_a_step_that_works_on_after_its_helpers_end_is_not_killed() -> None:
    """The tree's CPU reading must not fall when the child ends: here it would fall by 1.5 s
    of CPU, more than the parent's next second adds, and the parent would be killed."""
    cli = Cli("sqlite:///unused.db", "watchdog", stall_seconds=1.0)
    _usage, stalled = cli._wait(_start(1.5, 1.5))
    assert stalled is None


def test_a_step_that_takes_no_cpu_for_the_window_is_killed() -> None:
    cli = Cli("sqlite:///unused.db", "watchdog", stall_seconds=1.0)
    proc = _start(0.1, -30.0)
    _usage, stalled = cli._wait(proc)
    assert stalled == ""  # killed; no server to describe
    assert proc.returncode == -9
