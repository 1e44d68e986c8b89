"""Ledger administration: create-db and rebuild."""

from __future__ import annotations

import time

import click

from cli.params import DURATION
from cli.session import change_options, session
from ledger.app import Ledger
from ledger.errors import InvalidValue
from projections import runner


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
    default=0.5,
    show_default=True,
    help="Weight of each older period relative to the next (0 < F < 1).",
)
@change_options
@click.pass_context
def create_db(
    ctx: click.Context,
    priority_decay_half_life: float,
    priority_usage_reset_period: float,
    decay_factor: float,
    actor: str | None,
    reason: str | None,
) -> None:
    """Create a new, empty ledger at --db."""
    if not 0.0 < decay_factor < 1.0:
        raise InvalidValue(f"invalid decay factor: {decay_factor} (must be 0 < F < 1)")
    if priority_decay_half_life <= 0:
        raise InvalidValue(f"invalid half-life: {priority_decay_half_life} (must be > 0)")
    s = session(ctx)
    ledger = Ledger.create(
        s.store,
        priority_decay_half_life,
        priority_usage_reset_period,
        decay_factor,
        now=s.now,
        actor=actor or s.actor,
        reason=reason or "",
    )
    s.adopt(ledger)
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


COMMANDS = [create_db, rebuild]
