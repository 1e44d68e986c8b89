"""Priority factor weights and config: edit-factor, view-factor, list-factors, reset-factors,
edit-config, add-config, delete-config, view-config, list-configs."""

from __future__ import annotations

import click

from cli.output import NO_RESULTS, Output, output_options
from cli.params import AsOf, as_of_option
from cli.session import change_options, session
from ledger.errors import InvalidValue
from ledger.site_config import TRES_WEIGHTS_KEY
from projections.queries import site as queries
from projections.writers.schema import CONFIG_COLUMNS, FACTOR_COLUMNS


@click.command("edit-factor")
@click.option(
    "--factor",
    required=True,
    help="fairshare, queue, bank or urgency; on a Slurm site age, assoc, fairshare, jobsize, "
    "partition or qos.",
)
@click.option("--weight", required=True, type=int)
@change_options
@click.pass_context
def edit_factor(
    ctx: click.Context, factor: str, weight: int, actor: str | None, reason: str | None
) -> None:
    """Set a priority factor's weight."""
    changed = session(ctx).change(lambda s, st: s.edit_factor(st, factor, weight), reason, actor)
    if not changed:
        click.echo(f"factor {factor}: nothing to change", err=True)


@click.command("view-factor")
@click.argument("factor")
@output_options
@as_of_option
@click.pass_context
def view_factor(
    ctx: click.Context,
    as_of: AsOf | None,
    factor: str,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """Show a priority factor's weight."""
    row = queries.factor(session(ctx).read(as_of), factor)
    click.echo(Output(as_json, fmt, fields).render([row], FACTOR_COLUMNS))


@click.command("list-factors")
@output_options
@as_of_option
@click.pass_context
def list_factors(
    ctx: click.Context, as_of: AsOf | None, as_json: bool, fmt: str | None, fields: str | None
) -> None:
    """List priority factor weights."""
    rows = queries.factors(session(ctx).read(as_of))
    click.echo(Output(as_json, fmt, fields).render(rows, FACTOR_COLUMNS, empty=NO_RESULTS))


@click.command("reset-factors")
@change_options
@click.pass_context
def reset_factors(ctx: click.Context, actor: str | None, reason: str | None) -> None:
    """Set the factor weights back to their defaults."""
    session(ctx).change(lambda s, st: s.reset_factors(st), reason, actor)


def _pairs(items: tuple[str, ...]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, _, value = item.partition("=")
        # Slurm's PriorityWeightTRES is itself a list of TRES=weight pairs.
        nested = key.strip() == TRES_WEIGHTS_KEY and "=" in value
        if item.count("=") != 1 and not nested:
            # flux-accounting's words (t1093 greps them), then the value refused.
            raise InvalidValue(f'key-value string must contain exactly one "=": {item!r}')
        pairs.append((key.strip(), value.strip()))
    return pairs


@click.command("edit-config")
@click.argument("settings", nargs=-1, required=True, metavar="KEY=VALUE...")
@change_options
@click.pass_context
def edit_config(
    ctx: click.Context, settings: tuple[str, ...], actor: str | None, reason: str | None
) -> None:
    """Change config keys (weights, half-life, reset period, decay factor, deny_unknown_queues,
    timezone).

    \b
    Recomputed: priority_decay_half_life, priority_usage_reset_period and
      decay_factor: usage from the change on is recomputed from the stored
      jobs with the new values (nothing is wiped; as-of reads before it keep
      the old ones).
    Not recomputed: node_weight, core_weight and gpu_weight price each job
      when it is recorded; a new weight prices only the jobs recorded after
      it, never history.
    timezone (an IANA name, default UTC): the zone of a time typed without
      one; changes no usage.
    """
    pairs = _pairs(settings)
    changed = session(ctx).change(lambda s, st: s.edit_config(st, pairs), reason, actor)
    if not changed:
        click.echo("config: nothing to change", err=True)


@click.command("add-config")
@click.argument("setting", metavar="KEY=VALUE")
@change_options
@click.pass_context
def add_config(ctx: click.Context, setting: str, actor: str | None, reason: str | None) -> None:
    """Add a config key of the site's own (the core keys always exist: use edit-config)."""
    ((key, value),) = _pairs((setting,))
    session(ctx).change(lambda s, st: s.add_config(st, key, value), reason, actor)


@click.command("delete-config")
@click.argument("key")
@change_options
@click.pass_context
def delete_config(ctx: click.Context, key: str, actor: str | None, reason: str | None) -> None:
    """Delete a key add-config added (the core keys cannot be deleted)."""
    session(ctx).change(lambda s, st: s.delete_config(st, key), reason, actor)


@click.command("view-config")
@click.argument("key")
@output_options
@as_of_option
@click.pass_context
def view_config(
    ctx: click.Context,
    as_of: AsOf | None,
    key: str,
    as_json: bool,
    fmt: str | None,
    fields: str | None,
) -> None:
    """Show one config key."""
    row = queries.config(session(ctx).read(as_of), key)
    click.echo(Output(as_json, fmt, fields).render([row], CONFIG_COLUMNS))


@click.command("list-configs")
@output_options
@as_of_option
@click.pass_context
def list_configs(
    ctx: click.Context, as_of: AsOf | None, as_json: bool, fmt: str | None, fields: str | None
) -> None:
    """List config keys and values."""
    output = Output(as_json, fmt, fields)
    keys_only = output.select(CONFIG_COLUMNS) == ["key"]
    rows = queries.configs(session(ctx).read(as_of), in_force=True, keys_only=keys_only)
    click.echo(output.render(rows, CONFIG_COLUMNS, empty=NO_RESULTS))


COMMANDS = [
    edit_factor,
    view_factor,
    list_factors,
    reset_factors,
    edit_config,
    add_config,
    delete_config,
    view_config,
    list_configs,
]
