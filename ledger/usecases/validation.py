"""Ingest's pass 1 for one chunk of lines: validated, shaped and charged records, and the bad
lines with their numbers. Pure: the same chunk gives the same answer in the command's process
or in a helper process (Helpers: ledger.usecases.ingest gives a long input to them).

A helper is a fresh interpreter running this module (not a fork: the command holds a database
connection, and may hold threads), which learns the site's state once, when it starts."""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.chain import record_digest
from ledger.collector import collect_less
from ledger.errors import InvalidValue
from ledger.machine import start_helper
from ledger.usecases.charge_bound import Charge, charges_of
from ledger.usecases.spool import chunk_bytes

if TYPE_CHECKING:
    from ledger.ingest import BadLine
    from ledger.slurm.sacct_jobs import SacctLines
    from ledger.state import SiteState


# Helpers run below the command's priority: a file is recorded while they validate it, and
# the recording, in the command's process, is what the ingest waits for. As many helpers as
# idle CPUs then let the scheduler share them: on 2 CPUs, 125,000 jobs into a SQLite ledger
# took 3.43 s from JSON lines and 4.80 s from sacct's, against 3.42 and 5.77-6.08 s with one
# helper and 3.97-4.22 s (JSON) with two at the command's priority.
HELPER_NICENESS = 10


@dataclass(frozen=True)
class Terms:
    """What validating a chunk needs besides its lines: the latest time a job may have ended,
    the site then (the charge weights, the queues' billing, the QOS usage factors), and what
    reads each line into an item first, if the format needs it (sacct's lines, once its
    header is read)."""

    latest: float
    state: SiteState
    read_lines: SacctLines | None = None


@dataclass
class Validated:
    """A chunk, or a helper's piece of one, validated: its records as the spool holds them,
    what each adds to its identity's charge total, and its bad lines. Bytes rather than
    records: a helper's result crosses to the command's process, which spools an input it
    validates first without unpickling a record (a file it records unpickles them once)."""

    spooled: list[bytes]
    charges: list[Charge]
    bad: list[BadLine]
    skipped: Counter[str]  # lines that are no ended job, by kind (sacct's steps, say)


def validate_chunk(
    chunk: list[Any],
    first_line: int,
    terms: Terms,
    mark: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Validated:
    """The chunk's lines, the first numbered `first_line` (read into items first by the
    terms' `read_lines`, if any): each good one as the primitive record the log stores
    (amended by `mark`, if given), each bad one with its number and message."""
    skipped: Counter[str] = Counter()
    if terms.read_lines is not None:
        chunk, skipped = terms.read_lines.items(chunk, first_line)
    digested, bad = digested_records(chunk, first_line, terms, mark)
    records = [record for record, _ in digested]
    return Validated([chunk_bytes(digested)], charges_of(records), bad, skipped)


def digested_records(
    items: list[Any],
    first_line: int,
    terms: Terms,
    mark: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[list[tuple[dict[str, Any], str]], list[BadLine]]:
    """The per-job steps of pass 1 over lines (or items already read), the first numbered
    `first_line`: each good one validated, made into the record the log stores with its charge
    (amended by `mark`, if given) and paired with its digest; each bad one with its number and
    message. bench.ingest_ceiling runs these same steps."""
    # Imported here: pydantic's model build is the costliest import, and only ingest needs it.
    from ledger.ingest import job_billing, parse_lines, to_record, weights

    state = terms.state
    node_w, core_w, gpu_w = weights(state)
    parsed = parse_lines(
        items, first_line=first_line, latest=terms.latest, charge_weights=(node_w, core_w, gpu_w)
    )
    records = [
        to_record(job, node_w, core_w, gpu_w, job_billing(job, state), state.usage_factor(job.qos))
        for job in parsed.records
    ]
    if mark is not None:
        records = [mark(r) for r in records]
    return [(record, record_digest(record)) for record in records], parsed.bad


class Helpers:
    """Helper processes validating pieces of the input, each `python -m
    ledger.usecases.validation` reading its work from its stdin and writing what it found to
    its stdout, pickled: the terms once, then (piece, first line) after (piece, first line).
    Pipes, rather than a multiprocessing pool: when the command's process ends, even by
    SIGKILL, a helper's stdin ends and so does the helper (a pool's workers hold both ends of
    their queue and would wait for ever), and nothing of the program that called the command
    is imported again in them. Work is given round-robin and taken back in the same order.
    Each helper has two threads here: one writes its work, so that a helper blocked writing a
    result never waits on a command blocked writing its next piece; one reads its answers as
    they come, so that a helper never waits for the command to take one (a pipe holds less
    than one answer) while the command records what it took before."""

    def __init__(self, count: int, terms: Terms) -> None:
        self._procs = [start_helper("ledger.usecases.validation") for _ in range(count)]
        self._work: list[queue.SimpleQueue[tuple[list[Any], int] | None]] = []
        self._answers: list[queue.SimpleQueue[Validated | BaseException | None]] = []
        self._threads = []
        for proc in self._procs:
            work: queue.SimpleQueue[tuple[list[Any], int] | None] = queue.SimpleQueue()
            answers: queue.SimpleQueue[Validated | BaseException | None] = queue.SimpleQueue()
            for thread in (
                threading.Thread(target=_feed, args=(proc, terms, work), daemon=True),
                threading.Thread(target=_drain, args=(proc, answers), daemon=True),
            ):
                thread.start()
                self._threads.append(thread)
            self._work.append(work)
            self._answers.append(answers)
        self._given = 0  # pieces given, the next goes to helper given % count
        self._taken = 0

    def give(self, piece: list[Any], first_line: int) -> None:
        self._work[self._given % len(self._procs)].put((piece, first_line))
        self._given += 1

    def take(self) -> Validated:
        """What the earliest piece not yet taken gave."""
        index = self._taken % len(self._procs)
        self._taken += 1
        answer = self._answers[index].get()
        if answer is None:
            raise InvalidValue(
                "a helper process validating the input ended "
                f"(exit status {self._procs[index].wait()})"
            )
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def close(self) -> None:
        """End every helper: one still working on pieces that will not be taken (the input
        was refused) is killed, an idle one ends when its stdin closes; one that has not ended
        within a second is killed."""
        if self._taken < self._given:
            for proc in self._procs:
                proc.kill()
        for work in self._work:
            work.put(None)
        for proc in self._procs:
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=1)
        for proc in self._procs:
            if proc.stdout is not None:
                proc.stdout.close()


def _feed(proc: subprocess.Popen[bytes], terms: Terms, work: queue.SimpleQueue[Any]) -> None:
    """A writer thread: the terms, then each piece given, to the helper's stdin; closed at the
    end of the work (None), or when the helper has ended."""
    assert proc.stdin is not None
    try:
        pickle.dump(terms, proc.stdin, pickle.HIGHEST_PROTOCOL)
        while (item := work.get()) is not None:
            pickle.dump(item, proc.stdin, pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
    except (BrokenPipeError, OSError):
        pass  # the helper ended: take() says so
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _drain(
    proc: subprocess.Popen[bytes], answers: queue.SimpleQueue[Validated | BaseException | None]
) -> None:
    """A reader thread: each answer of the helper as it comes; None once it has ended."""
    assert proc.stdout is not None
    try:
        while True:
            answers.put(pickle.load(proc.stdout))
    except (EOFError, OSError, ValueError, pickle.UnpicklingError):
        answers.put(None)


def _serve() -> None:
    """A helper process: validate each piece read from stdin until it ends, each answer (or
    the error raised) pickled to stdout. Ctrl-C reaches the whole process group: the command
    says it was interrupted and ends its helpers, which must not print their own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(HELPER_NICENESS)
    collect_less()  # the site's state is in its heap too, as in the command's
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    try:
        terms = pickle.load(source)
        while True:
            piece, first_line = pickle.load(source)
            answer: Validated | BaseException
            try:
                answer = validate_chunk(piece, first_line, terms)
            except Exception as err:  # noqa: BLE001 - the command raises it
                answer = err
            pickle.dump(answer, sink, pickle.HIGHEST_PROTOCOL)
            sink.flush()
    except (EOFError, BrokenPipeError):
        return  # the command has ended, has no more work, or will read no more answers


if __name__ == "__main__":
    # Run as the imported module, not as __main__: what it pickles must name the module the
    # command unpickles it from.
    from ledger.usecases.validation import _serve as serve

    serve()
