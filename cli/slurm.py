"""Bringing a Slurm site over: import-slurm."""

from __future__ import annotations

import json
from typing import Any

import click

from cli.session import change_options, session
from ledger.clock import iso
from ledger.usecases import slurm_import


@click.command("import-slurm")
@click.argument("dump", metavar="[DUMPFILE]", required=False)
@click.option(
    "--usage",
    "usage",
    default=None,
    metavar="FILE",
    help="sshare -a -l -P (or -p, or -o with Account,User,RawUsage) output: each user "
    "association's RawUsage becomes its opening balance.",
)
@click.option(
    "--conf",
    "conf",
    default=None,
    metavar="FILE",
    help="The site's slurm.conf: its PriorityWeight*, PriorityFlags, decay, reset and partitions "
    "(queues with their nodes' totals). With DUMPFILE, part of that import; alone, applied to "
    "this ledger's site, recording only what differs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@change_options
@click.pass_context
def import_slurm(
    ctx: click.Context,
    dump: str | None,
    usage: str | None,
    conf: str | None,
    as_json: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Bring a Slurm site's tree over from `sacctmgr dump` output DUMPFILE: the Cluster line is
    the root bank, accounts become banks and users associations, with their Fairshare (parent
    kept as 2147483647) and default accounts; what is not modelled (QOS, limits) is listed as
    ignored. Into a ledger with no banks (create-db first), in one transaction; the same files
    again change nothing. --conf FILE alone: the site's slurm.conf applied to this ledger."""
    if dump is None:
        if usage is not None:
            raise click.UsageError("--usage needs DUMPFILE: its rows name the dump's associations")
        if conf is None:
            raise click.UsageError("give DUMPFILE, or --conf FILE, or both")
        applied = slurm_import.import_slurm_conf(session(ctx), conf, actor, reason)
        _echo_ignored(applied.report)
        click.echo(json.dumps(applied.report, indent=2) if as_json else render_conf(applied.report))
        return
    outcome = slurm_import.import_slurm(session(ctx), dump, usage, actor, reason, conf)
    if isinstance(outcome, slurm_import.AlreadyImported):
        click.echo(
            f"{outcome.file} was already imported ({iso(outcome.at)}, sha256 "
            f"{outcome.sha256[:12]}): nothing changed"
        )
        return
    report = outcome.report
    if report["conf"] is not None:
        _echo_ignored(report["conf"])
    click.echo(json.dumps(report, indent=2) if as_json else render_report(report))


def _echo_ignored(conf: dict[str, Any]) -> None:
    """slurm.conf's ignored lines on stderr: a real file has dozens, which are no result."""
    ignored = conf["ignored"]
    if ignored:
        click.echo(f"ignored {len(ignored)} lines of {conf['conf']} (not modelled):", err=True)
        for line in ignored:
            click.echo(f"  {line}", err=True)


def render_conf(conf: dict[str, Any]) -> str:
    """What a slurm.conf changed, one line per setting."""
    if not conf["changes"]:
        return f"{conf['conf']}: nothing changed (sha256 {conf['sha256'][:12]})"
    lines = [f"{conf['conf']}: {conf['changes']} settings changed"]
    if conf["fairshare_algorithm"] is not None:
        old, new = conf["fairshare_algorithm"]
        lines.append(f"  fairshare_algorithm {old} -> {new}")
    for key, (old, new) in conf["config"].items():
        lines.append(f"  {key} {old or '(none)'} -> {new or '(none)'}")
    for factor, (old, new) in conf["factors"].items():
        lines.append(f"  factor {factor} {old} -> {new}")
    if conf["queues_added"]:
        lines.append(f"  queues added: {', '.join(conf['queues_added'])}")
    if conf["queues_edited"]:
        lines.append(f"  queues edited: {', '.join(conf['queues_edited'])}")
    return "\n".join(lines)


def render_report(report: dict[str, Any]) -> str:
    balance = report["balance"]
    lines = [
        f"imported cluster {report['cluster']} from {report['file']} (sha256 "
        f"{report['sha256'][:12]}) in {report['seconds']:.2f}s",
        f"banks {report['banks']}, associations {report['associations']}, default banks set "
        f"{report['default_banks']}" + (f", QOS {report['qos']}" if report["qos"] else ""),
    ]
    if report["fairshare_algorithm"] is not None:
        old_algorithm, new_algorithm = report["fairshare_algorithm"]
        why = "slurm.conf's PriorityFlags" if report["conf"] else "Slurm's default"
        lines.append(f"fairshare_algorithm {old_algorithm} -> {new_algorithm} ({why})")
    if balance["file"] is not None:
        lines.append(
            f"opening balance from {balance['file']}: {balance['associations']} associations, "
            f"raw usage {balance['raw_usage']:g}"
        )
    if report["conf"] is not None:
        lines.append(render_conf(report["conf"]))
    if report["ignored"]:
        lines.append("ignored:")
        lines += [f"  {item}" for item in report["ignored"]]
    return "\n".join(lines)


COMMANDS = [import_slurm]
