"""Ledger administration: create-db, rebuild, verify, doctor and grant."""

from __future__ import annotations

import click

from cli.doctor_text import finding_line
from cli.params import DURATION
from cli.session import change_options, session
from cli.verify_text import verified_lines
from ledger.site_config import ALGORITHMS, WEIGHTED_WALK
from ledger.usage import DEFAULT_DECAY_FACTOR
from ledger.usecases import admin


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
    "--fairshare-algorithm",
    type=click.Choice(ALGORITHMS),
    default=WEIGHTED_WALK,
    show_default=True,
    help="How update-fshare ranks associations: flux-accounting's walk or Slurm's.",
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
    fairshare_algorithm: str,
    group_readable: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Create a new, empty ledger at --db."""
    where = admin.create_ledger(
        session(ctx),
        priority_decay_half_life,
        priority_usage_reset_period,
        decay_factor,
        group_readable,
        actor,
        reason,
        fairshare_algorithm,
    )
    click.echo(f"created ledger at {where}")


@click.command("rebuild")
@click.pass_context
def rebuild(ctx: click.Context) -> None:
    """Drop every read model and rebuild it from the event log."""
    rebuilt = admin.rebuild(session(ctx))
    click.echo(f"rebuilt read models to log position {rebuilt.position} in {rebuilt.seconds:.2f}s")


@click.command("verify")
@click.pass_context
def verify(ctx: click.Context) -> None:
    """Check the log's hash chain and compare the read models with a rebuild from the log.

    Prints the chain's head (position and link): keep it elsewhere, and a later verify's head
    must extend it. Exit 1 names the first break."""
    for line in verified_lines(admin.verify(session(ctx))):
        click.echo(line)


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
    for granted in admin.grant(session(ctx), readers, writers, admins):
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
    s = session(ctx)
    if positions:
        for finding in admin.neutralize(s, positions, actor, reason):
            jobs = ", ".join(f"job {i} (cluster {c})" for c, i in finding.jobs)
            click.echo(f"neutralized position {finding.position}: {jobs or finding.summary}")
        return
    findings = admin.diagnose(s)
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
