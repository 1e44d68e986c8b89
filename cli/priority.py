"""What the scheduler sees: priority, check-job, export-json, export-payloads,
priority-update."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from cli.output import table
from cli.params import AsOf, as_of_option
from cli.session import session
from ledger import bounds
from ledger.errors import InvalidValue, LedgerError, NotFound
from ledger.flux_accounting.payloads import PAYLOAD_NAMES, payloads, plugin_config, strict_json
from ledger.limits import (
    AssociationCounters,
    AssociationLimits,
    JobRequest,
    LimitsPolicy,
    QueueCounters,
    QueueLimits,
    evaluate_job,
)
from ledger.priority import PriorityWeights, job_priority, queue_factor
from ledger.state import csv_items
from ledger.store.connections import Connection
from projections.queries import site as queries

EXIT_HELD = 3
EXIT_REJECTED = 4


def _association(conn: Connection, username: str, bank: str | None) -> dict[str, Any]:
    rows = queries.user_rows(conn, username)
    wanted = bank or rows[0]["default_bank"]
    for row in rows:
        if row["bank"] == wanted:
            return row
    raise NotFound(f"user {username} not found in bank {wanted}")


def _check_names(**names: str | None) -> None:
    """Names asked about must be names the ledger could hold (a NUL is refused by PostgreSQL)."""
    for kind, name in names.items():
        if name is not None:
            bounds.check_name(kind, name)


def _bank_priority(conn: Connection, bank: str) -> float:
    return float(queries.bank(conn, bank)["priority"])


def _weights(conn: Connection) -> PriorityWeights:
    return PriorityWeights(**{r["factor"]: int(r["weight"]) for r in queries.factors(conn)})


@click.command("priority")
@click.option("--username", required=True)
@click.option("--bank", default=None, help="Default: the user's default bank.")
@click.option("--queue", default=None, help="The job's queue (its priority is the factor).")
@click.option("--urgency", type=int, default=16, show_default=True, help="0 holds, 31 expedites.")
@click.option(
    "--fairshare",
    type=float,
    default=None,
    help="What-if: use this fair-share instead of the one in force.",
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
    urgency: int,
    fairshare: float | None,
    as_json: bool,
) -> None:
    """The integer priority a job of USERNAME would get, factor by factor."""
    if not 0 <= urgency <= 31:
        raise InvalidValue(f"invalid urgency: {urgency} (must be 0..31)")
    if fairshare is not None:
        fairshare = bounds.check_float("--fairshare", fairshare, 0.0, 1.0)
    _check_names(username=username, bank=bank, queue=queue)
    conn = session(ctx).read(as_of)
    assoc = _association(conn, username, bank)
    if queue is not None and queue not in {q["queue"] for q in queries.queues(conn)}:
        raise NotFound(f"queue {queue} not found in queue_table")
    queue_priorities = {q["queue"]: int(q["priority"]) for q in queries.queues(conn)}
    share = float(assoc["fairshare"]) if fairshare is None else fairshare
    result = job_priority(
        share,
        queue_factor(queue, queue_priorities),
        _bank_priority(conn, assoc["bank"]),
        urgency,
        _weights(conn),
    )
    factors = [
        {"factor": f.name, "value": f.value, "weight": f.weight, "product": f.product}
        for f in result.factors
    ]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "priority": result.priority,
                    "username": username,
                    "bank": assoc["bank"],
                    "queue": queue,
                    "urgency": urgency,
                    "factors": factors,
                },
                indent=2,
            )
        )
        return
    click.echo(table(factors, ["factor", "value", "weight", "product"]))
    click.echo(f"priority: {result.priority}")


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
    sizes = {
        "nodes": nodes,
        "cores": cores,
        "active": active,
        "running": running,
        "sched": sched,
        "running-nodes": running_nodes,
        "running-cores": running_cores,
        "queue-running": queue_running,
        "queue-nodes": queue_nodes,
        "queue-sched": queue_sched,
        "queue-sched-nodes": queue_sched_nodes,
        "queue-sched-cores": queue_sched_cores,
    }
    for name, value in sizes.items():
        if value < 0:
            raise InvalidValue(f"invalid --{name}: {value} (must be >= 0)")
        bounds.check_int(f"--{name}", value, 0, bounds.COUNT_MAX)
    _check_names(username=username, bank=bank, queue=queue, project=project)
    conn = session(ctx).read(as_of)
    # Unknown queues and projects are not errors here: the plugin's own rules decide
    # (an unknown queue passes unless deny_unknown_queues; a project must be listed).
    assoc = _association(conn, username, bank)
    queue_rows = queries.queues(conn)
    policy = LimitsPolicy(
        queues={
            q["queue"]: QueueLimits(
                priority=int(q["priority"]),
                max_running_jobs=int(q["max_running_jobs"]),
                max_nodes_per_assoc=int(q["max_nodes_per_assoc"]),
                max_sched_jobs=int(q["max_sched_jobs"]),
                max_sched_nodes_per_assoc=int(q["max_sched_nodes_per_assoc"]),
                max_sched_cores_per_assoc=int(q["max_sched_cores_per_assoc"]),
            )
            for q in queue_rows
        },
        projects=tuple(p["project"] for p in queries.projects(conn)),
        deny_unknown_queues=queries.config(conn, "deny_unknown_queues")["value"] == "true",
    )
    limits = AssociationLimits(
        userid=int(assoc["userid"]),
        active=bool(assoc["active"]),
        queues=tuple(csv_items(assoc["queues"])),
        projects=tuple(csv_items(assoc["projects"])),
        max_running_jobs=int(assoc["max_running_jobs"]),
        max_active_jobs=int(assoc["max_active_jobs"]),
        max_nodes=int(assoc["max_nodes"]),
        max_cores=int(assoc["max_cores"]),
        max_sched_jobs=int(assoc["max_sched_jobs"]),
    )
    in_queue = QueueCounters(
        cur_run_jobs=queue_running,
        cur_nodes=queue_nodes,
        cur_sched_jobs=queue_sched,
        cur_sched_nodes=queue_sched_nodes,
        cur_sched_cores=queue_sched_cores,
    )
    counters = AssociationCounters(
        cur_active_jobs=active,
        cur_run_jobs=running,
        cur_sched_jobs=sched,
        cur_nodes=running_nodes,
        cur_cores=running_cores,
        queue_usage={queue or "": in_queue},
    )
    decision = evaluate_job(
        JobRequest(nnodes=nodes, ncores=cores, queue=queue, project=project),
        limits,
        counters,
        policy,
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


def current_payloads(conn: Connection) -> dict[str, dict[str, Any]]:
    return payloads(
        associations=queries.associations(conn),
        queues=queries.queues(conn),
        projects=queries.projects(conn),
        banks=queries.banks(conn, include_inactive=True),
        factors=queries.factors(conn),
        config={r["key"]: r["value"] for r in queries.configs(conn)},
    )


@click.command("export-json")
@as_of_option
@click.pass_context
def export_json(ctx: click.Context, as_of: AsOf | None) -> None:
    """The config Flux's mf_priority plugin loads:
    flux jobtap load mf_priority.so "config=$(fairledger export-json)"."""
    click.echo(strict_json(plugin_config(current_payloads(session(ctx).read(as_of)))))


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
    sent = current_payloads(session(ctx).read(as_of))
    if directory is None:
        click.echo(strict_json(sent, indent=2))
        return
    os.makedirs(directory, exist_ok=True)
    texts = {name: strict_json(sent[name], indent=2) for name in PAYLOAD_NAMES}  # all, or none
    for name in PAYLOAD_NAMES:
        with open(os.path.join(directory, f"{name}.json"), "w", encoding="utf-8") as handle:
            handle.write(texts[name] + "\n")
    click.echo(f"wrote {len(PAYLOAD_NAMES)} payloads to {directory}")


@click.command("priority-update")
@click.pass_context
def priority_update(ctx: click.Context) -> None:
    """Send the payloads to a running Flux instance's mf_priority plugin, then reprioritize
    (what flux-accounting's priority-update does)."""
    from ledger.flux_accounting.transport import FluxUnavailable, connect, send_priority_update

    try:
        transport = connect()
    except FluxUnavailable as err:
        raise LedgerError(str(err)) from None
    sent = send_priority_update(transport, current_payloads(session(ctx).read()))
    click.echo(f"sent {', '.join(sent)}")


COMMANDS = [priority, check_job, export_json, export_payloads, priority_update]
