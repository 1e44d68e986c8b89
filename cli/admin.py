"""Ledger administration: create-db, rebuild, verify, doctor and grant."""

from __future__ import annotations

import time

import click

from cli.doctor_text import finding_line
from cli.params import DURATION
from cli.session import change_options, session
from ledger.errors import InvalidValue
from ledger.store import append_only, roles
from ledger.store.application import Ledger
from ledger.store.connections import ensure_schema
from ledger.usage import DEFAULT_DECAY_FACTOR
from projections.writers import runner


@click.command("create-db")
@click.option(
    "--priority-decay-half-life",
    type=DURATION,
    default="1w",
    show_default=True,
    help="Length of one usage period (Flux Standard Duration or seconds).",
)
@click.option(
    "--priority-usage-reset-period",
    type=DURATION,
    default="4w",
    show_default=True,
    help="How far back usage counts; past periods = reset period / half-life.",
)
@click.option(
    "--decay-factor",
    type=float,
    default=DEFAULT_DECAY_FACTOR,
    show_default=True,
    help="Weight of each older period relative to the next (0 < F < 1).",
)
@click.option(
    "--group-readable",
    is_flag=True,
    help="SQLite: create the file 0640 (its group may read it) instead of 0600.",
)
@change_options
@click.pass_context
def create_db(
    ctx: click.Context,
    priority_decay_half_life: float,
    priority_usage_reset_period: float,
    decay_factor: float,
    group_readable: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Create a new, empty ledger at --db."""
    if not 0.0 < decay_factor < 1.0:
        raise InvalidValue(f"invalid decay factor: {decay_factor} (must be 0 < F < 1)")
    if priority_decay_half_life <= 0:
        raise InvalidValue(f"invalid half-life: {priority_decay_half_life} (must be > 0)")
    s = session(ctx)
    if group_readable:
        if s.store.is_postgres:
            raise InvalidValue("--group-readable is for SQLite; on PostgreSQL use 'grant --reader'")
        ensure_schema(s.store, group_readable=True)
    s.create_ledger(
        priority_decay_half_life,
        priority_usage_reset_period,
        decay_factor,
        now=s.now,
        actor=actor or s.actor,
        reason=reason or "",
    )
    click.echo(f"created ledger at {s.store.describe()}")


@click.command("rebuild")
@click.pass_context
def rebuild(ctx: click.Context) -> None:
    """Drop every read model and rebuild it from the event log."""
    s = session(ctx)
    started = time.perf_counter()
    runner.rebuild(s.ledger, s.conn)
    position = s.ledger.recorder.max_notification_id()
    click.echo(
        f"rebuilt read models to log position {position} in {time.perf_counter() - started:.2f}s"
    )


@click.command("verify")
@click.pass_context
def verify(ctx: click.Context) -> None:
    """Check the log's hash chain and compare the read models with a rebuild from the log.

    Prints the chain's head (position and link): keep it elsewhere, and a later verify's head
    must extend it. Exit 1 names the first break."""
    from projections.verify import verify as verify_ledger

    s = session(ctx)
    started = time.perf_counter()
    result = verify_ledger(s.ledger, s.conn)
    click.echo(
        f"log: {result.events} events linked, head at position {result.head_position} "
        f"link {result.head_link}"
    )
    if result.unlinked:
        click.echo(
            f"log: {result.unlinked} events written before the hash chain existed; the next "
            "change links them"
        )
    click.echo(
        f"read models: {result.tables} tables equal a rebuild from the log "
        f"({time.perf_counter() - started:.2f}s)"
    )


@click.command("grant")
@click.option("--reader", "readers", multiple=True, metavar="ROLE", help="May read (repeatable).")
@click.option(
    "--writer",
    "writers",
    multiple=True,
    metavar="ROLE",
    help="May read, ingest jobs and run update-usage/update-fshare (repeatable).",
)
@click.option(
    "--admin",
    "admins",
    multiple=True,
    metavar="ROLE",
    help="A writer that may also change the site: banks, users, queues, config (repeatable).",
)
@click.pass_context
def grant(
    ctx: click.Context, readers: tuple[str, ...], writers: tuple[str, ...], admins: tuple[str, ...]
) -> None:
    """PostgreSQL: make each ROLE a member of this schema's reader, writer or admin group
    (fairledger_<schema>_reader|writer|admin, created if missing) and give the groups their
    privileges. Run it as the schema's owner or a superuser; again after adding tables."""
    store = session(ctx).store
    tables = append_only.table_names(store)
    for granted in roles.grant(store, readers, writers, admins, tables):
        click.echo(f"granted {granted}")


@click.command("doctor")
@click.option(
    "--neutralize",
    "positions",
    type=int,
    multiple=True,
    metavar="POSITION",
    help="Set aside the event at this log position (repeatable: every one the doctor names, "
    "in one command); needs --reason.",
)
@change_options
@click.pass_context
def doctor(
    ctx: click.Context, positions: tuple[int, ...], actor: str | None, reason: str | None
) -> None:
    """Name the events of the log its read models cannot apply (exit 1 if any).

    Written by an earlier release, such an event stops every command. With --neutralize, record
    that it is set aside (it stays in the log; history shows who, when and why)."""
    from projections import doctor as ledger_doctor

    s = session(ctx)
    if positions:
        if not (reason or "").strip():
            raise InvalidValue(
                "doctor --neutralize needs --reason: say why the events are set aside"
            )
        ledger = s.ledger
        ledger.actor = actor or s.actor
        for finding in ledger_doctor.neutralize(ledger, positions, reason or ""):
            jobs = ", ".join(f"job {i} (cluster {c})" for c, i in finding.jobs)
            click.echo(f"neutralized position {finding.position}: {jobs or finding.summary}")
        return
    # Read-only: not the session's ledger, which would bring the read models up to date first.
    ledger = Ledger.open(s.store, conn=s.conn)
    try:
        findings = ledger_doctor.diagnose(ledger)
    finally:
        ledger.close()
    if not findings:
        click.echo("no poisoned events")
        return
    for finding in findings:
        click.echo(finding_line(finding))
    click.echo(
        f"{len(findings)} poisoned event{'' if len(findings) == 1 else 's'}: set them aside with "
        "fairledger doctor "
        + " ".join(f"--neutralize {f.position}" for f in findings)
        + " --reason TEXT",
        err=True,
    )
    ctx.exit(1)


COMMANDS = [create_db, rebuild, verify, doctor, grant]
