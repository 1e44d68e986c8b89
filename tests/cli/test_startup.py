"""Start-up: `fairledger` imports a command's module only when that command runs, and a read
whose read models are current opens no Ledger application. What is imported is checked here;
how long it takes is the bench's (`python -m bench.run`), never a test's."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from cli.commands import INDEX
from cli.main import cli
from tests.conftest import Store

ROOT = Path(__file__).resolve().parents[2]
# What a small read must not import: the Ledger application and the library under it, the Site
# aggregate and its events, the projector.
HEAVY = ("eventsourcing", "ledger.site", "ledger.events", "ledger.store.application", "numpy")
HEAVY_WRITERS = ("projections.writers.runner",)
# Modules whose dataclasses a small read does not use and need not build as it starts: the
# site state's, and the checks of flux-accounting's rows (the names a read needs are apart).
BUILT_FOR_WRITES = ("ledger.state", "ledger.flux_accounting.tables")


def _command_modules() -> dict[str, click.Command]:
    """Every command of every module under cli/ that declares COMMANDS, found by reading the
    package rather than the table under test."""
    found: dict[str, click.Command] = {}
    for path in sorted((ROOT / "cli").glob("*.py")):
        module = importlib.import_module(f"cli.{path.stem}")
        for command in getattr(module, "COMMANDS", []):
            assert command.name not in found, f"{command.name} declared twice"
            assert command.name is not None
            found[command.name] = command
    return found


def test_the_table_names_every_command_and_its_module() -> None:
    found = _command_modules()
    assert sorted(INDEX) == sorted(found)
    for name, (module, _text) in INDEX.items():
        assert found[name].callback is not None
        assert found[name].callback.__module__ == f"cli.{module}", name


def test_each_line_is_the_commands_own_short_help() -> None:
    found = _command_modules()
    for name, (_module, text) in INDEX.items():
        assert text == found[name].get_short_help_str(limit=10**6), name


@pytest.mark.parametrize("width", [60, 80, 200])
def test_help_lists_every_command_as_click_would(width: int) -> None:
    """The lazy listing against the same group with every command imported, byte for byte."""
    eager = click.Group(
        name=cli.name,
        params=cli.params,
        help=cli.help,
        callback=cli.callback,
        context_settings=cli.context_settings,
        commands=_command_modules(),
    )
    shown = CliRunner().invoke(cli, ["--help"], prog_name="fairledger", terminal_width=width)
    expected = CliRunner().invoke(eager, ["--help"], prog_name="fairledger", terminal_width=width)
    assert shown.exit_code == expected.exit_code == 0
    assert "\n  view-bank " in shown.stdout
    assert shown.stdout == expected.stdout


def test_an_unknown_command_is_still_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["view-bnak", "root"], prog_name="fairledger")
    assert result.exit_code == 2
    assert "No such command 'view-bnak'" in result.stderr


def _imported(*args: str) -> list[str]:
    """The modules `fairledger ARGS` imports, in a fresh interpreter."""
    code = (
        "import sys, json\n"
        "from cli.main import cli\n"
        "try:\n"
        "    cli.main(sys.argv[1:], prog_name='fairledger')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return list(json.loads(done.stderr.strip().splitlines()[-1]))


def _heavy(modules: list[str], heavy: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy)]


def test_help_imports_no_command_module() -> None:
    modules = _imported("--help")
    commands = {f"cli.{module}" for module, _text in INDEX.values()}
    assert sorted(commands & set(modules)) == []
    assert _heavy(modules, HEAVY + HEAVY_WRITERS + ("psycopg", "rich", "pydantic")) == []


def test_a_small_read_on_current_read_models_opens_no_ledger(tmp_path: Path) -> None:
    store = Store("sqlite", f"sqlite:///{tmp_path / 'ledger.db'}")
    store.run("create-db")
    store.run("add-bank", "root", "1")
    store.run("add-bank", "physics", "50", "--parent-bank", "root")
    store.run("add-user", "--username", "alice", "--userid", "5001", "--bank", "physics")
    for read in (["view-bank", "root"], ["view-bank", "root", "-t"], ["list-users"]):
        modules = _imported("--db", store.url, *read)
        assert "projections.queries.site" in modules, read  # it did read
        assert _heavy(modules, HEAVY + HEAVY_WRITERS + BUILT_FOR_WRITES) == [], read


def test_a_command_opens_its_sqlite_file_once_for_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the file holds a log, its append-only guard and the event store library's reads
    all go through the command's one connection: each connection to a SQLite file reads the
    whole schema again."""
    import sqlite3

    store = Store("sqlite", f"sqlite:///{tmp_path / 'ledger.db'}")
    store.run("create-db")
    store.run("add-bank", "root", "1")
    opened: list[str] = []
    connect = sqlite3.connect

    def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(args[0] if args else kwargs["database"]))
        return connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counted)
    store.run("view-bank", "root")
    assert opened == [str(tmp_path / "ledger.db")]
    opened.clear()
    store.run("edit-bank", "root", "--shares", "2")
    assert opened == [str(tmp_path / "ledger.db")]


def test_a_read_after_a_write_sees_it(ledger_store: Store) -> None:
    """The read that skips the Ledger answers from read models the write brought up to date."""
    ledger_store.run("add-bank", "root", "1")
    before = json.loads(ledger_store.run("view-bank", "root").stdout)
    ledger_store.run("edit-bank", "root", "--shares", "7")
    after = json.loads(ledger_store.run("view-bank", "root").stdout)
    assert (before[0]["shares"], after[0]["shares"]) == (1, 7)


def test_a_read_of_a_missing_ledger_still_says_so(tmp_path: Path) -> None:
    store = Store("sqlite", f"sqlite:///{tmp_path / 'none.db'}")
    result = store.run("list-users", expect=1)
    assert result.stderr.startswith(
        f"fairledger: error opening DB: unable to open database file {tmp_path / 'none.db'} "
    )
    assert not (tmp_path / "none.db").exists()


def test_a_missing_ledger_is_named_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flux-accounting prints the path it was given (its t1006 greps `unable to open database
    file foo.db`); fairledger's own words after it name the file in full."""
    monkeypatch.chdir(tmp_path)
    result = Store("sqlite", "sqlite:///foo.db").run("update-usage", expect=1)
    assert result.stderr == (
        "fairledger: error opening DB: unable to open database file foo.db (no ledger at "
        f"sqlite:///{tmp_path / 'foo.db'}: run 'fairledger create-db' first)\n"
    )
    assert not (tmp_path / "foo.db").exists()
