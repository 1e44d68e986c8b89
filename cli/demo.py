"""`fairledger demo`: a small site built and run as an administrator and the accounting cron
would, on a fresh ledger, then its tree printed; then a Slurm site in a second ledger beside it.
The run is the use case's (ledger.usecases.demo); this prints its transcript."""

from __future__ import annotations

import click

from cli.audit_text import history_line
from cli.ingest_output import summary
from cli.reports import slurm_explanation_text
from cli.session import session
from cli.slurm import render_report
from cli.sprio import sprio_lines
from cli.sshare import columns, render
from cli.tree import render_tree
from cli.verify_text import verified_lines
from ledger.bounds import printable_lines
from ledger.clock import iso
from ledger.usecases import demo as demo_run


@click.command("demo")
@click.option(
    "--weeks",
    type=click.IntRange(2, 52),
    default=3,
    show_default=True,
    help="Weeks of generated jobs.",
)
@click.option("--seed", type=int, default=7, show_default=True)
@click.pass_context
def demo(ctx: click.Context, weeks: int, seed: int) -> None:
    """Build a small site on a new ledger, run its weekly accounting over generated jobs
    (ingest, update-fshare, an allocation change), and show the tree today and a week ago,
    and one association's history. Then a Slurm site in a second ledger beside the first
    (SQLite: the file's name with -slurm; PostgreSQL: the schema's with _slurm): its sacctmgr
    dump imported, billing weights, a week of sacct jobs, and sshare under Fair Tree and
    previewed under classic."""
    for step in demo_run.run_demo(session(ctx), weeks, seed):
        _show(step)


def _show(step: demo_run.Step) -> None:
    if isinstance(step, demo_run.LedgerMade):
        click.echo(f"created a demo ledger at {step.where}")
    elif isinstance(step, demo_run.Section):
        if step.week is None or step.at is None:
            click.echo()
        else:
            click.echo(f"\n# week {step.week}: the accounting cron at {iso(step.at)}")
    elif isinstance(step, demo_run.Running):
        click.echo(f"$ fairledger {step.command}")
    elif isinstance(step, demo_run.JobsIngested):
        summary(step.result)
    elif isinstance(step, demo_run.FairshareUpdated):
        click.echo(f"fair-share updated at {step.at.isoformat()}")
    elif isinstance(step, demo_run.BankTree):
        click.echo(render_tree(step.top, step.banks, step.members))
    elif isinstance(step, demo_run.History):
        for entry in step.entries:
            click.echo(history_line(entry))
    elif isinstance(step, demo_run.Verified):
        for line in verified_lines(step.report):
            click.echo(line)
    elif isinstance(step, demo_run.SlurmSection):
        click.echo(
            f"\n# a Slurm site in a ledger of its own (--db {step.where}), "
            f"its accounting cron at {iso(step.at)}"
        )
    elif isinstance(step, demo_run.SlurmImported):
        click.echo(render_report(step.report))
    elif isinstance(step, demo_run.Sprio):
        for line in sprio_lines(step.answer, long_format=True):
            click.echo(line)
    elif isinstance(step, demo_run.SlurmExplained):
        click.echo(printable_lines(slurm_explanation_text(step.explanation, step.audit)))
    else:
        answer = step.answer
        click.echo(render(answer.lines, columns(answer.algorithm, True), None, header=True))


COMMANDS = [demo]
