"""Completed jobs: ingest and view-job-records."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from cli.output import Output, output_options
from cli.params import TIME, AsOf, as_of_option
from cli.session import Session, change_options, session
from ledger import bounds
from ledger.clock import real_now
from ledger.errors import InvalidValue, NotFound
from ledger.flux_jobs import record_from_flux_row
from ledger.site_usage import AssociationResolver
from projections import job_queries, usage_tables

if TYPE_CHECKING:
    from ledger.ingest import BadLine
    from ledger.state import SiteState

CHUNK_LINES = 50_000  # lines validated at a time: bounds memory on million-job files
# Jobs recorded per transaction: 5 events of 1,000 jobs. Much larger saves (50 events, ~8 MB in
# one INSERT) hung on PostgreSQL: the library's pipelined insert waited on the server while the
# server waited on the rest of the statement.
RECORD_LINES = 5_000


def _json_lines(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        yield from handle


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
    spooled = None
    if fmt == "jsonl" and source == "-":
        # Standard input is read twice (validate everything, then record): spool it. As bytes:
        # JSON lines are UTF-8 (read back as such), whatever the locale's stdin encoding.
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as spooled:
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is not None:
                shutil.copyfileobj(stdin, spooled)
            else:
                spooled.write(sys.stdin.read().encode("utf-8"))
        path = spooled.name
    else:
        path = source
        if not os.path.exists(path):
            raise NotFound(f"no such file: {path}")
    try:
        counts = _ingest(s, path, fmt, skip_invalid, actor, reason, source)
    finally:
        if spooled is not None:
            os.unlink(spooled.name)
    click.echo(
        f"recorded {counts['recorded']}, duplicate {counts['duplicate']}, "
        f"unmatched {counts['unmatched']}"
        + (f", invalid {counts['invalid']}" if counts["invalid"] else "")
        + (f", conflicting {counts['conflicting']}" if counts["conflicting"] else "")
    )
    if counts["recorded"] == 0 and counts["duplicate"]:
        click.echo("nothing new: every job was already recorded", err=True)


def _reader(path: str, fmt: str) -> Iterator[Any]:
    return _flux_rows(path) if fmt == "flux-accounting-db" else _json_lines(path)


def _ingest(
    s: Session,
    path: str,
    fmt: str,
    skip_invalid: bool,
    actor: str | None,
    reason: str | None,
    shown: str,
) -> dict[str, int]:
    ledger = s.ledger
    ledger.actor = actor or s.actor
    state = ledger.state()
    with tempfile.TemporaryDirectory(prefix="fairledger-ingest-") as work:
        spool = os.path.join(work, "records.pickle")
        bad, total = _validate_to_spool(
            path, fmt, skip_invalid, shown, spool, state, charged=recorded_charges(s)
        )
        for line in bad:
            click.echo(f"fairledger: skipped {shown}: {line}", err=True)
        counts = _record_spool(s, spool, total, reason, {"input": shown, "format": fmt}, state)
    counts["invalid"] = len(bad)
    s.read()
    return counts


def _validate_to_spool(
    path: str,
    fmt: str,
    skip_invalid: bool,
    shown: str,
    spool: str,
    state: SiteState,
    mark: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    charged: dict[tuple[int, str, str], int] | None = None,
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
    totals = ChargeTotals(charged or {})
    bad: list[BadLine] = []
    first = 1
    with open(spool, "wb") as out:
        for chunk in _chunks(_reader(path, fmt), CHUNK_LINES):
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
            pickle.dump(records, out, pickle.HIGHEST_PROTOCOL)
    return bad, first - 1


def recorded_charges(s: Session) -> dict[tuple[int, str, str], int]:
    """The charge units recorded so far per job identity, from the caught-up read model."""
    return usage_tables.identity_charge_units(s.read())


class ChargeTotals:
    """Per job identity (userid, username, bank as recorded, like period_totals' key), the
    charge units recorded and read so far: every sum of them must fit a BIGINT, so an input
    that would take one past bounds.ASSOCIATION_CHARGE_UNITS_MAX is refused before anything is
    recorded (a duplicate of a recorded job counts too: conservative, and only near the
    bound)."""

    def __init__(self, recorded: dict[tuple[int, str, str], int]) -> None:
        self.units = dict(recorded)

    def add(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            if r.get("in_balance"):
                continue  # recorded with charge_units 0: its charge is the balance's
            key = (
                -1 if r.get("userid") is None else int(r["userid"]),
                r.get("username") or "",
                r.get("bank") or "",
            )
            total = self.units.get(key, 0) + usage_tables.charge_units(r["charge"])
            if total > bounds.ASSOCIATION_CHARGE_UNITS_MAX:
                who = "/".join(bounds.printable(str(part)) for part in key if part not in ("", -1))
                raise InvalidValue(
                    f"job {r['id']}: the charges of {who} would total "
                    f"{total / bounds.CHARGE_UNITS:.5f}, more than the ledger can sum "
                    f"({bounds.ASSOCIATION_CHARGE_UNITS_MAX / bounds.CHARGE_UNITS:.5f}); "
                    "nothing recorded"
                )
            self.units[key] = total


def _spooled(spool: str) -> Iterator[dict[str, Any]]:
    with open(spool, "rb") as handle:
        while True:
            try:
                yield from pickle.load(handle)
            except EOFError:
                return


def _record_spool(
    s: Session,
    spool: str,
    total_lines: int,
    reason: str | None,
    source: dict[str, Any],
    state: SiteState,
) -> dict[str, int]:
    """Pass 2: record in chunks, each one transaction; re-running after a crash is safe
    because recording is exactly-once."""
    from rich.progress import Progress

    ledger = s.ledger
    resolver = AssociationResolver(state)
    counts = {"recorded": 0, "duplicate": 0, "unmatched": 0, "conflicting": 0}
    show_progress = sys.stderr.isatty() and total_lines > CHUNK_LINES
    with Progress(disable=not show_progress, transient=True) as progress:
        task = progress.add_task("ingesting", total=total_lines)
        for chunk in _chunks(_spooled(spool), RECORD_LINES):
            outcome = ledger.record_jobs(chunk, reason=reason or "", source=source)
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
