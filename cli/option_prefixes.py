"""Long options by unique prefix, as argparse accepts them (flux-accounting's users type
`--queue` for `--queues`, `--parent` for `--parent-bank`), for every command of a group."""

from __future__ import annotations

import click


def expand_prefixes(
    command: click.Command, ctx: click.Context, args: list[str], options_first: bool = False
) -> list[str]:
    """`args` with each unique prefix of one of `command`'s long options written in full. An
    exact name wins; a prefix of several names is argparse's error (exit 2); a prefix of none is
    left for click to refuse. `options_first`: stop at the first positional (a group's own
    options come before its sub-command, whose options are not the group's)."""
    long_names: dict[str, click.Option] = {}
    takes_value: dict[str, int] = {}
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option):
            continue
        for name in (*param.opts, *param.secondary_opts):
            if name.startswith("--"):
                long_names[name] = param
            if not param.is_flag and not param.count:
                takes_value[name] = param.nargs
    out: list[str] = []
    pending = 0  # the values still owed to the option just read: never taken for options
    for index, arg in enumerate(args):
        if pending:
            out.append(arg)
            pending -= 1
            continue
        if arg == "--":
            out.extend(args[index:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, equals, value = arg.partition("=")
            if name not in long_names:
                matches = [n for n in long_names if n.startswith(name)]
                if len(matches) > 1:
                    raise click.UsageError(
                        f"ambiguous option: {arg} could match {', '.join(matches)}", ctx
                    )
                if matches:
                    name = matches[0]
            arg = name + equals + value
            if not equals:
                pending = takes_value.get(name, 0)
        elif arg.startswith("-") and arg != "-":
            pending = takes_value.get(arg, 0)
        elif options_first:
            out.extend(args[index:])
            break
        out.append(arg)
    return out


class PrefixGroup(click.Group):
    """A group whose own options and whose commands' options may be given by unique prefix."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_prefixes(self, ctx, args, options_first=True))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not isinstance(command, click.Group):
            rest = expand_prefixes(command, ctx, rest)
        return name, command, rest
