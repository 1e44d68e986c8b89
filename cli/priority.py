"""What the scheduler sees: priority, check-job, export-json, export-payloads,
priority-update."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from cli.output import table
from cli.params import TIME, AsOf, as_of_option
from cli.session import session
from ledger.flux_accounting.payloads import PAYLOAD_NAMES, strict_json
from ledger.priority import URGENCY_DEFAULT
from ledger.usecases import check_job as job_check
from ledger.usecases.priority import (
    current_payloads,
    plugin_config,
    priority_of,
    priority_view,
    send_priority_update,
)
from ledger.usecases.slurm_priority import (
    SlurmJob,
    answer_json,
    parse_tres_request,
    slurm_priority_of,
)

EXIT_HELD = 3
EXIT_REJECTED = 4


@click.command("priority")
@click.option("--username", required=True)
@click.option("--bank", default=None, help="Default: the user's default bank.")
@click.option("--queue", default=None, help="The job's queue (its priority is the factor).")
@click.option(
    "--urgency", type=int, default=None, help="0 holds, 31 expedites (Flux sites; default 16)."
)
@click.option(
    "--fairshare",
    type=float,
    default=None,
    help="What-if: use this fair-share instead of the one in force.",
)
@click.option("--qos", default=None, help="Slurm sites: the job's QOS (default: its DefaultQOS).")
@click.option("--nodes", type=int, default=None, help="Slurm sites: the job's minimum nodes (1).")
@click.option("--cpus", type=int, default=None, help="Slurm sites: the job's CPUs (none given).")
@click.option(
    "--time-limit", type=int, default=None, help="Slurm sites: the job's time limit in minutes."
)
@click.option("--submit", type=TIME, default=None, help="Slurm sites: submitted then (now).")
@click.option(
    "--eligible", type=TIME, default=None, help="Slurm sites: eligible then (its submission)."
)
@click.option("--nice", type=int, default=None, help="Slurm sites: the job's nice (0).")
@click.option("--site-factor", type=int, default=None, help="Slurm sites: its SiteFactor (0).")
@click.option(
    "--tres",
    default=None,
    metavar="TRES=N,...",
    help="Slurm sites: requested TRES, e.g. 'mem=8000,gres/gpu=2' (mem in MiB).",
)
@click.option("--json", "as_json", is_flag=True)
@as_of_option
@click.pass_context
def priority(
    ctx: click.Context,
    as_of: AsOf | None,
    username: str,
    bank: str | None,
    queue: str | None,
    urgency: int | None,
    fairshare: float | None,
    as_json: bool,
    **slurm: Any,
) -> None:
    """The integer priority a job of USERNAME would get, factor by factor (on a Slurm site,
    Slurm's multifactor priority, like sprio -l -n -w)."""
    s = session(ctx)
    view = priority_view(s, as_of)
    if view.slurm:
        if urgency is not None:
            raise click.UsageError("--urgency is Flux's; a Slurm site's job takes --nice")
        job = slurm_job(username, bank, queue, fairshare, slurm)
        priced = slurm_priority_of(s, job, view=view)
        if as_json:
            click.echo(json.dumps(answer_json(priced), indent=2))
            return
        click.echo(table(priced.factor_rows(), ["factor", "value", "weight", "product"]))
        click.echo(f"priority: {priced.result.priority}")
        return
    given = [f"--{name.replace('_', '-')}" for name, value in slurm.items() if value is not None]
    if given:
        raise click.UsageError(f"{', '.join(given)}: Slurm sites only (this site is a Flux one)")
    urgency = URGENCY_DEFAULT if urgency is None else urgency
    answer = priority_of(s, username, bank, queue, urgency, fairshare, view=view)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "priority": answer.priority,
                    "username": answer.username,
                    "bank": answer.bank,
                    "queue": answer.queue,
                    "urgency": answer.urgency,
                    "factors": answer.factors,
                },
                indent=2,
            )
        )
        return
    click.echo(table(answer.factors, ["factor", "value", "weight", "product"]))
    click.echo(f"priority: {answer.priority}")


def slurm_job(
    username: str,
    bank: str | None,
    queue: str | None,
    fairshare: float | None,
    options: dict[str, Any],
) -> SlurmJob:
    """The job `priority`'s Slurm options describe."""
    submit, eligible = options["submit"], options["eligible"]
    return SlurmJob(
        username=username,
        bank=bank,
        queue=queue,
        qos=options["qos"],
        nodes=1 if options["nodes"] is None else options["nodes"],
        cpus=options["cpus"] or 0,
        time_limit=options["time_limit"],
        submit=submit,
        eligible=eligible,
        nice=options["nice"] or 0,
        site_factor=options["site_factor"] or 0,
        tres=parse_tres_request(options["tres"]),
        fairshare=fairshare,
    )


@click.command("check-job")
@click.option("--username", required=True)
@click.option("--bank", default=None, help="Default: the user's default bank.")
@click.option("--queue", default=None)
@click.option("--project", default=None)
@click.option("--nodes", type=int, default=1, show_default=True)
@click.option("--cores", type=int, default=1, show_default=True)
@click.option("--active", type=int, default=0, help="The association's current active jobs.")
@click.option("--running", type=int, default=0, help="Its running jobs.")
@click.option("--sched", type=int, default=0, help="Its scheduled jobs.")
@click.option("--running-nodes", type=int, default=0, help="Nodes its running jobs hold.")
@click.option("--running-cores", type=int, default=0, help="Cores its running jobs hold.")
@click.option(
    "--queue-running",
    type=int,
    default=0,
    help="Its running jobs in the job's queue.",
)
@click.option(
    "--queue-nodes",
    type=int,
    default=0,
    help="Nodes its running jobs hold in the job's queue.",
)
@click.option(
    "--queue-sched",
    type=int,
    default=0,
    help="Its scheduled jobs in the job's queue.",
)
@click.option("--queue-sched-nodes", type=int, default=0)
@click.option("--queue-sched-cores", type=int, default=0)
@click.option("--json", "as_json", is_flag=True)
@as_of_option
@click.pass_context
def check_job(
    ctx: click.Context,
    as_of: AsOf | None,
    username: str,
    bank: str | None,
    queue: str | None,
    project: str | None,
    nodes: int,
    cores: int,
    active: int,
    running: int,
    sched: int,
    running_nodes: int,
    running_cores: int,
    queue_running: int,
    queue_nodes: int,
    queue_sched: int,
    queue_sched_nodes: int,
    queue_sched_cores: int,
    as_json: bool,
) -> None:
    """Would the plugin accept, hold or reject this job? Exit 0 accepted, 3 held,
    4 rejected."""
    decision = job_check.check_job(
        session(ctx),
        job_check.JobToCheck(username, bank, queue, project, nodes, cores),
        job_check.LiveJobs(
            active=active,
            running=running,
            sched=sched,
            running_nodes=running_nodes,
            running_cores=running_cores,
            queue_running=queue_running,
            queue_nodes=queue_nodes,
            queue_sched=queue_sched,
            queue_sched_nodes=queue_sched_nodes,
            queue_sched_cores=queue_sched_cores,
        ),
        as_of,
    )
    if as_json:
        click.echo(
            json.dumps(
                {
                    "status": decision.status,
                    "message": decision.message,
                    "dependencies": list(decision.dependencies),
                },
                indent=2,
            )
        )
    elif decision.status == "rejected":
        click.echo(f"rejected: {decision.message}")
    elif decision.status == "held":
        click.echo(f"held: {', '.join(decision.dependencies)}")
    else:
        click.echo("accepted")
    if decision.status != "accepted":
        ctx.exit(EXIT_HELD if decision.status == "held" else EXIT_REJECTED)


@click.command("export-json")
@as_of_option
@click.pass_context
def export_json(ctx: click.Context, as_of: AsOf | None) -> None:
    """The config Flux's mf_priority plugin loads:
    flux jobtap load mf_priority.so "config=$(fairledger export-json)"."""
    click.echo(strict_json(plugin_config(session(ctx), as_of)))


@click.command("export-payloads")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Write NAME.json per payload here (default: one object on stdout).",
)
@as_of_option
@click.pass_context
def export_payloads(ctx: click.Context, as_of: AsOf | None, directory: str | None) -> None:
    """The priority-update RPC payloads (rec_update, rec_q_update, ...), as sent."""
    sent = current_payloads(session(ctx), as_of)
    if directory is None:
        click.echo(strict_json(sent, indent=2))
        return
    texts = {name: strict_json(sent[name], indent=2) for name in PAYLOAD_NAMES}  # all, or none
    try:
        os.makedirs(directory, exist_ok=True)
        for name in PAYLOAD_NAMES:
            with open(os.path.join(directory, f"{name}.json"), "w", encoding="utf-8") as handle:
                handle.write(texts[name] + "\n")
    except OSError as err:
        # An empty or unwritable --dir, a file in its way: one line, not a traceback.
        raise click.FileError(err.filename or directory, hint=err.strerror or str(err)) from None
    click.echo(f"wrote {len(PAYLOAD_NAMES)} payloads to {directory}")


@click.command("priority-update")
@click.pass_context
def priority_update(ctx: click.Context) -> None:
    """Send the payloads to a running Flux instance's mf_priority plugin, then reprioritize
    (what flux-accounting's priority-update does)."""
    click.echo(f"sent {', '.join(send_priority_update(session(ctx)))}")


COMMANDS = [priority, check_job, export_json, export_payloads, priority_update]
