"""Every command, with garbage arguments, on both stores, empty and with a ledger: never a
traceback (issue 12). The commands are enumerated from the click group itself, so a command
added later is covered without touching this file.

Each outcome must be one of: exit 0 (the garbage was acceptable), exit 1 with exactly one line
on stderr (`fairledger: ...`), exit 2 with click's usage block, or the 3 and 4 some commands
use for an answer (verify, check-job). Nothing may print a Python traceback or leave an
exception that is not SystemExit.

FAIRLEDGER_FUZZ_EXAMPLES=N draws N argument lists per store and state instead of the default.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import cli
from tests.conftest import T0, Store

EXAMPLES = int(os.environ.get("FAIRLEDGER_FUZZ_EXAMPLES", "80"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same trials on every run: CI is repeatable
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
# The demo builds a whole site over simulated weeks: only its refusals are tried here.
SLOW = {("demo",)}
ANSWER_CODES = {0, 1, 2, 3, 4}
# Bytes that are not UTF-8 on a command line reach Python as lone surrogates (surrogateescape).
NOT_UTF8 = "caf\udce9"
GARBAGE_STDIN = b"\xff\xfe\x00garbage\n\x1f\x8b\x08 not gzip\n{]\n"


def leaf_commands(
    group: click.Group = cli, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command a user can type, sub-commands of groups (`report ...`) included."""
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the top group loads its commands when asked
        command = group.get_command(ctx, name)
        assert command is not None
        path = (*prefix, name)
        if isinstance(command, click.Group):
            found.extend(leaf_commands(command, path))
        else:
            found.append((path, command))
    return found


COMMANDS = leaf_commands()
FAST = [(path, command) for path, command in COMMANDS if path not in SLOW]


def hostile_values(tmp: Path) -> list[str]:
    return [
        "",
        "garbage",
        "-1",
        "0",
        "99999999999999999999",
        "1e999",
        "nan",
        "-inf",
        NOT_UTF8,
        "a\x00b",
        "a\nb",
        "\x1b[31m",
        "-",
        str(tmp),  # a directory
        str(tmp / "missing" / "file"),
        str(tmp / "out.png"),
        "x=y",
        "{nosuchfield}",
        "{jobid:%Q}",
        "alice",
        "A",
        "root",
        "< 5",
        "1d",
        "9999-12-31T23:59:59Z",
        "1/1/1970",
    ]


def option_names(command: click.Command) -> list[tuple[click.Option, str]]:
    return [(p, p.opts[-1]) for p in command.params if isinstance(p, click.Option)]


def filled_arguments(command: click.Command) -> list[str]:
    """A plausible value for each positional argument, so that options are reached."""
    out: list[str] = []
    for param in command.params:
        if isinstance(param, click.Argument):
            out.extend(["A"] * (1 if param.nargs == 1 else 2))
    return out


def invoke(store: Store, args: list[str]) -> Result:
    return CliRunner().invoke(
        cli,
        ["--db", store.url, "--now", str(T0), *args],
        input=GARBAGE_STDIN,
        prog_name="fairledger",
    )


def assert_no_traceback(args: list[str], result: Result) -> None:
    shown = f"fairledger {args!r} exited {result.exit_code}\nstdout: {result.stdout!r}\n"
    shown += f"stderr: {result.stderr!r}\nexception: {result.exception!r}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        trace = "".join(traceback.format_exception(result.exception))
        raise AssertionError(f"{shown}\n{trace}")
    assert "Traceback (most recent call last)" not in result.output, shown
    assert result.exit_code in ANSWER_CODES, shown
    if result.exit_code == 1:
        lines = result.stderr.splitlines()
        # A read's notes (a lagging read model, the moment an as-of answer reflects) may come
        # first; the refusal itself is one line.
        errors = [line for line in lines if not line.startswith("fairledger: warning:")]
        assert len(errors) == 1 and errors[0].strip(), shown
    if result.exit_code == 2:
        # A usage error's last line is argparse's `PROG [CMD]: error: MESSAGE`.
        assert re.match(r"fairledger[^:]*: error: \S", result.stderr.splitlines()[-1]), shown


def table_cases(command: click.Command) -> list[list[str]]:
    """What every command gets: an unknown option, --help, positionals that are not UTF-8, and
    each option without its value. Click refuses most of these before the store is opened, so
    they are tried once, on the empty store; the drawn argument lists reach the ledger."""
    cases: list[list[str]] = [["--no-such-option"], ["--help"]]
    cases.append([NOT_UTF8] * max(1, len(filled_arguments(command))))
    for param, name in option_names(command):
        if not param.is_flag:
            cases.append([*filled_arguments(command), name])
    return cases


def run_table(store: Store, commands: list[tuple[tuple[str, ...], click.Command]]) -> None:
    for path, command in commands:
        for case in table_cases(command):
            if path in SLOW and case != ["--no-such-option"]:
                continue
            args = [*path, *case]
            assert_no_traceback(args, invoke(store, args))


@st.composite
def argument_lists(
    draw: st.DrawFn, tmp: Path, commands: list[tuple[tuple[str, ...], click.Command]]
) -> list[str]:
    path, command = draw(st.sampled_from(commands))
    values = st.sampled_from(hostile_values(tmp)) | st.text(max_size=8)
    args = list(path)
    for param in command.params:
        if isinstance(param, click.Argument):
            args.extend(draw(values) for _ in range(1 if param.nargs == 1 else 2))
    options = option_names(command)
    if options:
        for param, name in draw(st.lists(st.sampled_from(options), max_size=3, unique=True)):
            args.append(name)
            if not param.is_flag:
                args.append(draw(values))
    return args


def fuzz(store: Store, tmp: Path, commands: list[tuple[tuple[str, ...], click.Command]]) -> None:
    @FUZZ
    @given(args=argument_lists(tmp, commands))
    def trial(args: list[str]) -> None:
        assert_no_traceback(args, invoke(store, args))

    trial()


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Commands that write files (export-db, --plot) write relative paths here."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_command_refuses_garbage_without_a_ledger(store: Store, cwd: Path) -> None:
    # create-db last: it would make the store a ledger for the commands after it.
    creating = [(path, command) for path, command in FAST if path == ("create-db",)]
    others = [(path, command) for path, command in COMMANDS if path != ("create-db",)]
    run_table(store, others)
    fuzz(store, cwd, [entry for entry in others if entry[0] not in SLOW])
    run_table(store, creating)


def test_every_command_refuses_garbage_on_a_ledger(ledger_store: Store, cwd: Path) -> None:
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    ledger_store.run("add-user", "-u", "alice", "-B", "A", "--userid", "5001")
    fuzz(ledger_store, cwd, FAST)


def test_global_options_refuse_garbage(store: Store, cwd: Path) -> None:
    for head in (
        ["--db", "garbage"],
        ["--db", f"sqlite:///{cwd}"],  # a directory
        ["--db", f"sqlite:///{cwd}/{NOT_UTF8}.db"],
        ["--db", "sqlite:///"],
        ["--db", "postgresql://postgres@127.0.0.1:5432/test?schema=Bad"],
        ["--db", store.url, "--now", "garbage"],
        ["--db", store.url, "--now", "1e999"],
        ["--db", store.url, "--now", NOT_UTF8],
        ["--db", store.url, "--no-such-option"],
        ["--db"],
    ):
        for tail in (["list-banks"], ["create-db"], ["ingest", "-"], []):
            args = [*head, *tail]
            result = CliRunner().invoke(cli, args, input=GARBAGE_STDIN, prog_name="fairledger")
            assert_no_traceback(args, result)
