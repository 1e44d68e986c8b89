"""Bringing a Slurm site over: import-slurm."""

from __future__ import annotations

import json
from typing import Any

import click

from cli.session import change_options, session
from ledger.clock import iso
from ledger.usecases import slurm_import


@click.command("import-slurm")
@click.argument("dump", metavar="DUMPFILE")
@click.option(
    "--usage",
    "usage",
    default=None,
    metavar="FILE",
    help="sshare -a -l -P (or -p, or -o with Account,User,RawUsage) output: each user "
    "association's RawUsage becomes its opening balance.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
@change_options
@click.pass_context
def import_slurm(
    ctx: click.Context,
    dump: str,
    usage: str | None,
    as_json: bool,
    actor: str | None,
    reason: str | None,
) -> None:
    """Bring a Slurm site's tree over from `sacctmgr dump` output DUMPFILE: the Cluster line is
    the root bank, accounts become banks and users associations, with their Fairshare (parent
    kept as 2147483647) and default accounts; what is not modelled (QOS, limits) is listed as
    ignored. Into a ledger with no banks (create-db first), in one transaction; the same files
    again change nothing."""
    outcome = slurm_import.import_slurm(session(ctx), dump, usage, actor, reason)
    if isinstance(outcome, slurm_import.AlreadyImported):
        click.echo(
            f"{outcome.file} was already imported ({iso(outcome.at)}, sha256 "
            f"{outcome.sha256[:12]}): nothing changed"
        )
        return
    report = outcome.report
    click.echo(json.dumps(report, indent=2) if as_json else render_report(report))


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
        lines.append(f"fairshare_algorithm {old_algorithm} -> {new_algorithm} (Slurm's default)")
    if balance["file"] is not None:
        lines.append(
            f"opening balance from {balance['file']}: {balance['associations']} associations, "
            f"raw usage {balance['raw_usage']:g}"
        )
    if report["ignored"]:
        lines.append("ignored:")
        lines += [f"  {item}" for item in report["ignored"]]
    return "\n".join(lines)


COMMANDS = [import_slurm]
