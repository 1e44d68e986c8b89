"""Completed jobs: ingest and view-job-records."""

from __future__ import annotations

import codecs
import os
import pickle
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

import click

from cli.output import Output, output_options
from cli.params import TIME, AsOf, as_of_option
from cli.session import Session, change_options, session
from ledger import bounds
from ledger.clock import real_now
from ledger.errors import Interrupted, InvalidValue, LedgerError, NotFound, WriteFailed
from ledger.flux_accounting.jobs import record_from_flux_row
from ledger.site_usage import AssociationResolver
from projections.queries import jobs as job_queries
from projections.writers import usage_tables

if TYPE_CHECKING:
    from ledger.ingest import BadLine
    from ledger.state import SiteState

CHUNK_LINES = 50_000  # lines validated at a time: bounds memory on million-job files
# Jobs recorded per transaction: 5 events of 1,000 jobs. Much larger saves (50 events, ~8 MB in
# one INSERT) hung on PostgreSQL: the library's pipelined insert waited on the server while the
# server waited on the rest of the statement.
RECORD_LINES = 5_000
SPOOL_PREFIX = "fairledger-spool-"


def _json_lines(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        yield from handle


def _stdin_lines() -> Iterator[str]:
    """Standard input, read once by the validation pass (nothing of it is kept on disk but the
    validated records), as UTF-8 whatever the locale's encoding: JSON lines are UTF-8."""
    stdin = getattr(sys.stdin, "buffer", None)
    if stdin is None:
        yield from sys.stdin
        return
    yield from codecs.iterdecode(stdin, "utf-8")


def spool_file() -> IO[bytes]:
    """A private temporary file for the validated records, unlinked as it is opened: it never
    outlives the process, not even a `kill -9`."""
    return tempfile.TemporaryFile(prefix=SPOOL_PREFIX)


def _flux_rows(path: str) -> Iterator[dict[str, Any]]:
    if not os.path.exists(path):
        raise NotFound(f"no such file: {path}")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        for row in conn.execute("SELECT * FROM jobs ORDER BY t_inactive, id"):
            yield record_from_flux_row(dict(row))
    except sqlite3.Error as err:
        raise InvalidValue(
            f"{path}: not a flux-accounting database with a jobs table ({err})"
        ) from None
    finally:
        conn.close()


def _chunks(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@click.command("ingest")
@click.argument("source", metavar="FILE|-")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "flux-accounting-db"]),
    default="jsonl",
    show_default=True,
    help="JSON lines, or a flux-accounting DB.",
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Record the valid lines and report each bad one (default: record nothing).",
)
@change_options
@click.pass_context
def ingest(
    ctx: click.Context,
    source: str,
    fmt: str,
    skip_invalid: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Record completed jobs, exactly once per (cluster, job id)."""
    s = session(ctx)
    if not (fmt == "jsonl" and source == "-") and not os.path.exists(source):
        raise NotFound(f"no such file: {source}")
    counts = ingest_lines(s, source, _reader(source, fmt), fmt, skip_invalid, actor, reason)
    report(counts)


def report(counts: dict[str, int]) -> None:
    """The one-line summary of an ingest (stdout), and a word on stderr when nothing was new."""
    click.echo(
        f"recorded {counts['recorded']}, duplicate {counts['duplicate']}, "
        f"unmatched {counts['unmatched']}"
        + (f", invalid {counts['invalid']}" if counts["invalid"] else "")
        + (f", conflicting {counts['conflicting']}" if counts["conflicting"] else "")
    )
    if counts["recorded"] == 0 and counts["duplicate"]:
        click.echo("nothing new: every job was already recorded", err=True)


def _reader(source: str, fmt: str) -> Iterator[Any]:
    if fmt == "flux-accounting-db":
        return _flux_rows(source)
    return _stdin_lines() if source == "-" else _json_lines(source)


def ingest_lines(
    s: Session,
    source: str,
    lines: Iterator[Any],
    fmt: str,
    skip_invalid: bool,
    actor: str | None,
    reason: str | None,
) -> dict[str, int]:
    """Validate `lines` (JSON texts or decoded objects) of `source`, then record them."""
    ledger = s.ledger
    ledger.actor = actor or s.actor
    state = ledger.state()
    with spool_file() as spool:
        bad, total = _validate_to_spool(
            lines, skip_invalid, source, spool, state, charged=recorded_charges(s)
        )
        for line in bad:
            click.echo(f"fairledger: skipped {source}: {line}", err=True)
        counts = _record_spool(
            s, spool, total, reason, {"input": source, "format": fmt}, state, "ingest"
        )
    counts["invalid"] = len(bad)
    s.read()
    return counts


def _validate_to_spool(
    lines: Iterator[Any],
    skip_invalid: bool,
    shown: str,
    spool: IO[bytes],
    state: SiteState,
    mark: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    charged: ChargeTotals | None = None,
) -> tuple[list[BadLine], int]:
    """Pass 1: validate every line, so that a bad one records nothing, and spool the valid
    ones as primitive records (charged with the weights in force), so that recording needs no
    second validation and a million-line input never sits in memory. `mark` may amend each
    record (import-flux-accounting marks the jobs its opening balance already holds).
    `charged`: the charge units already recorded per job identity (recorded_charges), which
    the input must not take past bounds.ASSOCIATION_CHARGE_UNITS_MAX."""
    # Imported here: pydantic's model build is the costliest import, and only ingest needs it.
    from ledger.ingest import check_no_bad_lines, parse_lines, to_record, weights

    node_w, core_w, gpu_w = weights(state)
    latest = bounds.latest_time(real_now())
    totals = charged or ChargeTotals(0, dict)
    bad: list[BadLine] = []
    first = 1
    try:
        for chunk in _chunks(lines, CHUNK_LINES):
            parsed = parse_lines(
                chunk, first_line=first, latest=latest, charge_weights=(node_w, core_w, gpu_w)
            )
            first += len(chunk)
            if parsed.bad and not skip_invalid:
                check_no_bad_lines(parsed, shown)
            bad.extend(parsed.bad)
            records = [to_record(job, node_w, core_w, gpu_w) for job in parsed.records]
            records = [mark(r) if mark else r for r in records]
            totals.add(records)
            # Pickled a chunk at a time: this private temporary file is read back only by
            # pass 2 of the same process, and pickle is several times faster than JSON here.
            pickle.dump(records, spool, pickle.HIGHEST_PROTOCOL)
    except UnicodeDecodeError as err:
        raise InvalidValue(f"{shown}: not UTF-8 ({err.reason}); nothing recorded") from None
    return bad, first - 1


def recorded_charges(s: Session) -> ChargeTotals:
    """What ingest checks new charges against, from the caught-up read model."""
    conn = s.read()
    return ChargeTotals(
        usage_tables.total_charge_units(conn), lambda: usage_tables.identity_charge_units(conn)
    )


class ChargeTotals:
    """Per job identity (userid, username, bank as recorded, like period_totals' key), the
    charge units recorded and read so far: every sum of them must fit a BIGINT, so an input
    that would take one past bounds.ASSOCIATION_CHARGE_UNITS_MAX is refused before anything is
    recorded (a duplicate of a recorded job counts too: conservative, and only near the
    bound). While everything recorded plus everything read stays under the bound, no identity
    can pass it, so the per-identity totals (a scan of every period total) are read only when
    that sum does not."""

    def __init__(
        self,
        site_total: int | None,
        load: Callable[[], dict[tuple[int, str, str], int]],
    ) -> None:
        self.site_total = site_total
        self.load = load
        self.read_units = 0
        self.read: dict[tuple[int, str, str], int] = {}
        self.recorded: dict[tuple[int, str, str], int] | None = None

    def add(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            if r.get("in_balance"):
                continue  # recorded with charge_units 0: its charge is the balance's
            key = (
                -1 if r.get("userid") is None else int(r["userid"]),
                r.get("username") or "",
                r.get("bank") or "",
            )
            units = usage_tables.charge_units(r["charge"])
            self.read[key] = self.read.get(key, 0) + units
            self.read_units += units
            if self.recorded is None:
                if (
                    self.site_total is not None
                    and self.site_total + self.read_units <= bounds.ASSOCIATION_CHARGE_UNITS_MAX
                ):
                    continue
                self.recorded = self.load()
                for earlier in self.read:  # read before the sum came near the bound
                    self._check(earlier, r)
            else:
                self._check(key, r)

    def _check(self, key: tuple[int, str, str], record: dict[str, Any]) -> None:
        assert self.recorded is not None
        total = self.recorded.get(key, 0) + self.read[key]
        if total > bounds.ASSOCIATION_CHARGE_UNITS_MAX:
            who = "/".join(bounds.printable(str(part)) for part in key if part not in ("", -1))
            raise InvalidValue(
                f"job {record['id']}: the charges of {who} would total "
                f"{total / bounds.CHARGE_UNITS:.5f}, more than the ledger can sum "
                f"({bounds.ASSOCIATION_CHARGE_UNITS_MAX / bounds.CHARGE_UNITS:.5f}); "
                "nothing recorded"
            )


def _spooled(spool: IO[bytes]) -> Iterator[dict[str, Any]]:
    spool.seek(0)
    while True:
        try:
            yield from pickle.load(spool)
        except EOFError:
            return


def _record_spool(
    s: Session,
    spool: IO[bytes],
    total_lines: int,
    reason: str | None,
    source: dict[str, Any],
    state: SiteState,
    command: str,
) -> dict[str, int]:
    """Pass 2: record in chunks, each one transaction; re-running after a crash is safe
    because recording is exactly-once. A chunk that fails after others committed says how
    many jobs are recorded and that `command` run again completes the input."""
    from rich.progress import Progress

    ledger = s.ledger
    resolver = AssociationResolver(state)
    counts = {"recorded": 0, "duplicate": 0, "unmatched": 0, "conflicting": 0}
    show_progress = sys.stderr.isatty() and total_lines > CHUNK_LINES
    with Progress(disable=not show_progress, transient=True) as progress:
        task = progress.add_task("ingesting", total=total_lines)
        for chunk in _chunks(_spooled(spool), RECORD_LINES):
            try:
                outcome = ledger.record_jobs(chunk, reason=reason or "", source=source)
            except LedgerError as err:
                if not counts["recorded"]:
                    raise
                problem = err.problem if isinstance(err, WriteFailed) else str(err)
                raise Interrupted(
                    f"{problem} after recording {counts['recorded']} jobs; re-run the same "
                    f"{command} to complete it: recording is exactly-once"
                ) from err
            recorded = outcome.recorded
            counts["duplicate"] += outcome.duplicate
            counts["conflicting"] += len(outcome.conflicts)
            for conflict in outcome.conflicts:
                cluster, job_id = conflict.key
                where = (
                    f"the record at log position {conflict.position}"
                    if conflict.position
                    else "an earlier line of this input"
                )
                click.echo(
                    f"fairledger: conflict: job {job_id} (cluster {cluster}) differs from "
                    f"{where}; not recorded",
                    err=True,
                )
            counts["recorded"] += len(recorded)
            counts["unmatched"] += sum(
                1
                for r in recorded
                if resolver.resolve(r.get("userid"), r.get("username"), r.get("bank")) is None
            )
            progress.update(task, advance=len(chunk))
    return counts


JOB_COLUMNS = [
    "jobid",
    "username",
    "userid",
    "t_submit",
    "t_run",
    "t_inactive",
    "nnodes",
    "project",
    "bank",
    "requested_duration",
    "actual_duration",
    "duration_delta",
]
ALL_JOB_COLUMNS = JOB_COLUMNS + ["id", "cluster", "queue", "ncores", "ngpus", "charge"]


def _duration_filter(exprs: tuple[str, ...], name: str) -> list[tuple[str, float]]:
    out = []
    for expr in exprs:
        parts = expr.split()
        if len(parts) != 2 or parts[0] not in ("<", "<=", "=", ">=", ">"):
            raise click.BadParameter(
                f"{expr!r}: use '<op> <number>' with op one of <, <=, =, >=, >", param_hint=name
            )
        try:
            out.append((parts[0], float(parts[1])))
        except ValueError:
            raise click.BadParameter(
                f"{expr!r}: {parts[1]!r} is not a number", param_hint=name
            ) from None
    return out


@click.command("view-job-records")
@click.option("-u", "--user", default=None, help="Username (or numeric userid).")
@click.option("-j", "--jobid", default=None, help="A job ID in any Flux form.")
@click.option("-a", "--after-start-time", type=TIME, default=None, help="Jobs with t_run > T.")
@click.option("-b", "--before-end-time", type=TIME, default=None, help="Jobs with t_inactive < T.")
@click.option("--project", default=None)
@click.option("-B", "--bank", default=None)
@click.option("-d", "--requested-duration", multiple=True, metavar="'OP N'")
@click.option("-e", "--actual-duration", multiple=True, metavar="'OP N'")
@click.option("-D", "--duration-delta", multiple=True, metavar="'OP N'")
@output_options
@as_of_option
@click.pass_context
def view_job_records(
    ctx: click.Context,
    as_of: AsOf | None,
    user: str | None,
    jobid: str | None,
    after_start_time: float | None,
    before_end_time: float | None,
    project: str | None,
    bank: str | None,
    requested_duration: tuple[str, ...],
    actual_duration: tuple[str, ...],
    duration_delta: tuple[str, ...],
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """List recorded jobs, filtered as flux-accounting's view-job-records does."""
    from ledger.job_ids import format_f58, parse_job_id

    job_id = None
    if jobid is not None:
        try:
            job_id = parse_job_id(jobid)
        except InvalidValue as err:
            raise click.BadParameter(str(err), param_hint="--jobid") from None
    rows = job_queries.job_records(
        session(ctx).read(),
        max_position=session(ctx).moment(as_of).position if as_of is not None else None,
        user=user,
        job_id=job_id,
        after_start=after_start_time,
        before_end=before_end_time,
        project=project,
        bank=bank,
        requested=_duration_filter(requested_duration, "--requested-duration"),
        actual=_duration_filter(actual_duration, "--actual-duration"),
        delta=_duration_filter(duration_delta, "--duration-delta"),
    )
    owners = AssociationResolver(session(ctx).ledger.state()).user_of_uid
    for row in rows:
        row["jobid"] = format_f58(int(row["id"]))
        if row["username"] is None and row["userid"] is not None:
            row["username"] = owners.get(row["userid"])  # named, as flux-accounting does
    out = Output(as_json, fmt, fields)
    if as_json or fmt or fields:
        click.echo(out.render(rows, ALL_JOB_COLUMNS if (fmt or fields) else JOB_COLUMNS))
        return
    shown = [
        {
            c: (f"{v:.2f}" if isinstance(v, float) else ("" if v is None else v))
            for c, v in row.items()
        }
        for row in rows
    ]
    click.echo(out.render(shown, JOB_COLUMNS))


COMMANDS = [ingest, view_job_records]
