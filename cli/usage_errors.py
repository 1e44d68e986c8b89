"""A malformed command line said in argparse's words, as flux-accounting's CLI says it.

flux-accounting's admins and its own tests grep these lines (`add-user: error: the following
arguments are required: -u/--username`, `error: unrecognized arguments: --foo=bar`). click finds
the same mistakes; this only rewords them and prints `PROG CMD: error: MESSAGE` after click's
usage line. The exit code stays 2, argparse's and click's.
"""

from __future__ import annotations

import re
from typing import IO, Any

import click

# click's wording of a value its type refused, and argparse's name for that type.
_TYPE_REFUSALS = (
    (re.compile(r"^(?P<value>'.*') is not a valid integer\.?$", re.DOTALL), "int"),
    (re.compile(r"^(?P<value>'.*') is not a valid float\.?$", re.DOTALL), "float"),
)
_CHOICE_REFUSAL = re.compile(r"^(?P<value>'.*') is not one of (?P<choices>.*?)\.?$", re.DOTALL)
_EXTRA_ARGUMENTS = re.compile(r"^Got unexpected extra arguments? \((?P<args>.*)\)$", re.DOTALL)


def option_strings(param: click.Parameter) -> str:
    """argparse's name for an option: its strings, short ones first (`-u/--username`); a
    positional argument's is its name (`shares`)."""
    if not isinstance(param, click.Option):
        return param.name or "?"
    return "/".join(sorted(param.opts, key=lambda name: name.startswith("--")))


def _param_for(command: click.Command | None, option_name: str) -> click.Parameter | None:
    if command is None:
        return None
    for param in command.params:
        if option_name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _unrecognized(option_name: str, raw_args: list[str]) -> list[str]:
    """The unknown option as given (`--foo=bar`) and the values after it that no option takes
    (`--colour red`): what argparse leaves over."""
    for index, arg in enumerate(raw_args):
        if arg == option_name or arg.startswith(f"{option_name}="):
            rest = raw_args[index + 1 :]
            values = []
            if "=" not in arg:
                for value in rest:
                    if value.startswith("-"):
                        break
                    values.append(value)
            return [arg, *values]
    return [option_name]


def argparse_message(
    err: click.UsageError, command: click.Command | None, raw_args: list[str]
) -> str:
    """What argparse would say for the mistake click found in `command`'s `raw_args`."""
    if isinstance(err, click.MissingParameter) and err.param is not None:
        return f"the following arguments are required: {option_strings(err.param)}"
    if isinstance(err, click.NoSuchOption):
        return f"unrecognized arguments: {' '.join(_unrecognized(err.option_name, raw_args))}"
    if isinstance(err, click.BadOptionUsage) and "requires" in err.message:
        param = _param_for(command, err.option_name)
        name = option_strings(param) if param is not None else err.option_name
        return f"argument {name}: expected one argument"
    if isinstance(err, click.BadParameter) and err.param is not None:
        name = option_strings(err.param)
        for pattern, type_name in _TYPE_REFUSALS:
            match = pattern.match(err.message)
            if match:
                return f"argument {name}: invalid {type_name} value: {match.group('value')}"
        choice = _CHOICE_REFUSAL.match(err.message)
        if choice:
            return (
                f"argument {name}: invalid choice: {choice.group('value')} "
                f"(choose from {choice.group('choices')})"
            )
        return f"argument {name}: {err.message}"
    extra = _EXTRA_ARGUMENTS.match(err.message)
    if extra:
        return f"unrecognized arguments: {extra.group('args')}"
    return err.format_message()


class ArgparseUsageError(click.UsageError):
    """click's usage line and help hint, then argparse's `PROG CMD: error: MESSAGE`."""

    def __init__(self, message: str, ctx: click.Context | None, prog: str) -> None:
        super().__init__(message, ctx)
        self.prog = prog

    def show(self, file: IO[Any] | None = None) -> None:
        prog = self.prog
        lines = []
        if self.ctx is not None:
            prog = self.ctx.command_path
            lines.append(f"{self.ctx.get_usage()}\nTry '{prog} --help' for help.\n")
        lines.append(f"{prog}: error: {self.format_message()}")
        click.echo("\n".join(lines), file=file, err=file is None)
