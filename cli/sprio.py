"""sprio: the priorities of pending jobs given as input (JSON lines or `squeue --json`), printed
as Slurm's sprio prints them (ledger.slurm.sprio_format)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import click

from cli.params import AsOf, as_of_option
from cli.session import session
from ledger.errors import InvalidValue
from ledger.site_config import csv_items
from ledger.slurm.sprio_format import (
    check_sort,
    default_format,
    parse_format,
    render,
    sort_results,
    sprio_priority,
)
from ledger.usecases.job_sources import input_lines, stream_lines
from ledger.usecases.sprio import SprioAnswer, SprioRequest, sprio

NO_JOB_FOUND = "Unable to find jobs matching user/id(s) specified"  # sprio.c's words


def _job_ids(text: str | None) -> tuple[int, ...]:
    ids = []
    for item in csv_items(text or ""):
        if not item.isdigit() or not 0 < int(item) < 2**32 - 1:
            raise InvalidValue(f"invalid job id: {item}")
        ids.append(int(item))
    return tuple(ids)


def _jobs_text(source: str) -> str:
    lines: Iterator[str]
    if source == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        lines = iter(sys.stdin) if stdin is None else stream_lines(stdin)
    else:
        lines = input_lines(source, "jsonl")
    return "".join(lines)


def _json(answer: SprioAnswer, order: list[Any]) -> dict[str, Any]:
    return {
        "at": answer.at,
        "input": answer.source,
        "weights": vars(answer.weights),
        "jobs": [
            {
                "job_id": priced.result.job_id,
                "partition": priced.queue,
                "user": priced.result.user,
                "account": priced.bank,
                "qos": priced.qos,
                "priority": priced.result.priority,
                "sprio_priority": int(sprio_priority(priced.result)),
                "factors": priced.factor_rows(),
            }
            for priced in order
        ],
        "skipped": dict(answer.skipped),
    }


@click.command("sprio", context_settings={"help_option_names": ["--help"]})
@click.option(
    "--jobs",
    "source",
    metavar="FILE|-",
    default=None,
    help="The pending jobs: JSON lines (one job each) or `squeue --json` output.",
)
@click.option("-l", "--long", "long_format", is_flag=True, help="Every column (sprio -l).")
@click.option("-n", "--norm", "normalized", is_flag=True, help="The factors before weighting.")
@click.option("-w", "--weights", "weights_only", is_flag=True, help="Only the weights.")
@click.option("-h", "--noheader", is_flag=True, help="Leave out the header.")
@click.option("-j", "job_ids", metavar="LIST", default=None, help="Only these job ids.")
@click.option("-u", "--users", metavar="LIST", default=None, help="Only these users' jobs.")
@click.option("-p", "--partition", metavar="LIST", default=None, help="Only these partitions.")
@click.option("-S", "--sort", default=None, help="Sort keys, e.g. -y (default i: job id).")
@click.option("-o", "--format", "fmt", default=None, help="A sprio format, e.g. '%.15i %.10Y'.")
@click.option("--json", "as_json", is_flag=True, help="The rows and their factors as JSON.")
@as_of_option
@click.pass_context
def sprio_command(
    ctx: click.Context,
    as_of: AsOf | None,
    source: str | None,
    long_format: bool,
    normalized: bool,
    weights_only: bool,
    noheader: bool,
    job_ids: str | None,
    users: str | None,
    partition: str | None,
    sort: str | None,
    fmt: str | None,
    as_json: bool,
) -> None:
    """Slurm's sprio of pending jobs given as input (one row per job, partition and QOS)."""
    if long_format and fmt is not None:
        raise click.UsageError(
            "Options -o(--format) and -l(--long) are mutually exclusive. "
            "Please remove one and retry."
        )
    if source is None and not weights_only:
        raise click.UsageError("--jobs FILE|- is needed: the pending jobs to price (-w: none)")
    layout = parse_format(fmt) if fmt is not None else None
    check_sort(sort)
    asked = SprioRequest(
        jobs_text=None if weights_only else _jobs_text(str(source)),
        job_ids=_job_ids(job_ids),
        users=tuple(csv_items(users or "")),
        partitions=tuple(csv_items(partition or "")),
    )
    answer = sprio(session(ctx), asked, as_of)
    by_result = {id(p.result): p for p in answer.rows}
    order = [by_result[id(r)] for r in sort_results([p.result for p in answer.rows], sort)]
    if as_json:
        click.echo(json.dumps(_json(answer, order), indent=2, allow_nan=False))
        return
    if answer.skipped:
        counts = ", ".join(f"{n} {what}" for what, n in sorted(answer.skipped.items()))
        click.echo(f"fairledger: sprio: skipped {counts}", err=True)
    if asked.job_ids and not weights_only and not answer.listed:
        click.echo(NO_JOB_FOUND)
        return
    for line in sprio_lines(
        answer,
        order,
        layout,
        long_format=long_format,
        normalized=normalized,
        users=bool(asked.users),
        header=not noheader,
        weights_only=weights_only,
    ):
        click.echo(line)


def sprio_lines(
    answer: SprioAnswer,
    order: list[Any] | None = None,
    layout: Any = None,
    *,
    long_format: bool = False,
    normalized: bool = False,
    users: bool = False,
    header: bool = True,
    weights_only: bool = False,
) -> list[str]:
    """sprio's lines for `answer`'s rows (in `order`, default as given) in `layout`, default
    sprio's format for the options (-l, -n, -u)."""
    if layout is None:
        layout = parse_format(
            default_format(answer.weights, long=long_format, normalized=normalized, users=users)
        )
    rows = answer.rows if order is None else order
    return render(
        [p.result for p in rows],
        layout,
        answer.weights,
        header=header,
        weights_row=weights_only,
    )


COMMANDS = [sprio_command]
