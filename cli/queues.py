"""Queue commands: add-queue, edit-queue, delete-queue, view-queue, list-queues."""

from __future__ import annotations

from typing import Any

import click

from cli.output import NO_RESULTS, Output, output_options
from cli.params import AsOf, as_of_option
from cli.session import change_options, session
from ledger.site_config import PARTITION_DEFAULTS
from projections.queries import site as queries
from projections.writers.schema import QUEUE_COLUMNS


def queue_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option("--min-nodes-per-job", type=int, default=None),
            click.option("-N", "--max-nodes-per-job", type=int, default=None),
            click.option("-t", "--max-time-per-job", type=int, default=None),
            click.option(
                "-P",
                "--priority",
                type=int,
                default=None,
                help="Queue priority factor (may be negative).",
            ),
            click.option("--max-running-jobs", type=int, default=None),
            click.option("--max-nodes-per-assoc", type=int, default=None),
            click.option("--max-sched-jobs", type=int, default=None),
            click.option("-msn", "--max-sched-nodes-per-assoc", type=int, default=None),
            click.option("-msc", "--max-sched-cores-per-assoc", type=int, default=None),
            click.option("--max-nodes", type=int, default=None),
            click.option("--max-cores", type=int, default=None),
            click.option(
                "--billing-weights",
                default=None,
                metavar="TRES=W,...",
                help="Slurm's TRESBillingWeights, e.g. 'CPU=1.0,Mem=0.25G,GRES/gpu=2.0' "
                "(memory per MiB; K/M/G/T/P scale); '' clears (billing = the job's CPUs).",
            ),
            click.option(
                "--priority-job-factor",
                type=int,
                default=None,
                help="Slurm's PriorityJobFactor (0..65533; default 1): the partition factor.",
            ),
            click.option(
                "--priority-tier",
                type=int,
                default=None,
                help="Slurm's PriorityTier (0..65533; default 1): sorts before priority.",
            ),
            click.option(
                "--total-nodes", type=int, default=None, help="The partition's node count."
            ),
            click.option("--total-cpus", type=int, default=None, help="The partition's CPUs."),
            click.option(
                "--total-tres",
                default=None,
                metavar="TRES=N,...",
                help="The partition's other TRES totals, e.g. 'mem=512000,gres/gpu=8' (mem in "
                "MiB); '' clears.",
            ),
        ]
    ):
        func = option(func)
    return func


@click.command("add-queue")
@click.argument("queue")
@queue_options
@change_options
@click.pass_context
def add_queue(
    ctx: click.Context,
    queue: str,
    billing_weights: str | None,
    actor: str | None,
    reason: str | None,
    **given: Any,
) -> None:
    """Add QUEUE with its limits, priority, billing weights and Slurm partition fields."""
    part = _partition(given)
    session(ctx).change(
        lambda s, st: s.add_queue(st, queue, given, billing_weights, part), reason, actor
    )


@click.command("edit-queue")
@click.argument("queue")
@queue_options
@change_options
@click.pass_context
def edit_queue(
    ctx: click.Context,
    queue: str,
    billing_weights: str | None,
    actor: str | None,
    reason: str | None,
    **given: Any,
) -> None:
    """Edit QUEUE; -1 resets a limit to its default (priority takes any integer)."""
    part = _partition(given)
    changed = session(ctx).change(
        lambda s, st: s.edit_queue(st, queue, given, billing_weights, part), reason, actor
    )
    if not changed:
        click.echo(f"queue {queue}: nothing to change", err=True)


def _partition(given: dict[str, Any]) -> dict[str, Any]:
    """Takes the partition fields out of the options given (the rest are the limits)."""
    return {name: given.pop(name) for name in PARTITION_DEFAULTS}


@click.command("delete-queue")
@click.argument("queue")
@change_options
@click.pass_context
def delete_queue(ctx: click.Context, queue: str, actor: str | None, reason: str | None) -> None:
    """Remove QUEUE."""
    users = session(ctx).change(lambda s, st: s.delete_queue(st, queue), reason, actor)
    if users:
        # flux-accounting's warning, on stdout as it prints it (its scripts grep for it); the
        # associations concerned follow on stderr.
        click.echo(
            "WARNING: user(s) in the association_table still reference this queue. Make sure "
            "to edit user rows to account for this deleted queue."
        )
        click.echo(f"fairledger: associations listing queue {queue}: {', '.join(users)}", err=True)


@click.command("view-queue")
@click.argument("queue")
@output_options(parsable=True)
@as_of_option
@click.pass_context
def view_queue(
    ctx: click.Context,
    as_of: AsOf | None,
    queue: str,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
    parsable: bool,
) -> None:
    """Show QUEUE (JSON; a table with --parsable)."""
    row = queries.queue(session(ctx).read(as_of), queue)
    extra = [queries.BILLING_WEIGHTS, *PARTITION_DEFAULTS]
    columns = [*QUEUE_COLUMNS, *(column for column in extra if column in row)]
    click.echo(Output(as_json, fmt, fields, parsable).render([row], columns, default="json"))


@click.command("list-queues")
@output_options
@as_of_option
@click.pass_context
def list_queues(
    ctx: click.Context, as_of: AsOf | None, as_json: bool, fmt: str | None, fields: str | None
) -> None:
    """List queues."""
    rows = queries.queues(session(ctx).read(as_of))
    click.echo(Output(as_json, fmt, fields).render(rows, QUEUE_COLUMNS, empty=NO_RESULTS))


COMMANDS = [add_queue, edit_queue, delete_queue, view_queue, list_queues]
