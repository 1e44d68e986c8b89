"""The `flux` shim and the step classification, without a flux-accounting checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.flux_sharness import runner, shim

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "path", "rest"),
    [
        (["-p", "/x.db", "create-db"], "/x.db", ["create-db"]),
        (["--path", "/x.db", "view-bank", "A"], "/x.db", ["view-bank", "A"]),
        (["--path=/x.db", "list-users"], "/x.db", ["list-users"]),
        # -p after the command is the command's own (view-bank -P is --parsable, say).
        (["view-user", "-p", "u"], None, ["view-user", "-p", "u"]),
        (["-p", "/a.db", "-p", "/b.db", "list-banks"], "/b.db", ["list-banks"]),
    ],
)
def test_the_global_path_option(args: list[str], path: str | None, rest: list[str]) -> None:
    assert shim.split_path_option(args) == (path, rest)


def test_an_executables_path_may_follow_its_options() -> None:
    assert shim.take_path_option(["-v", "-p", "/x.db"]) == ("/x.db", ["-v"])


def _flux(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("FAIRLEDGER_DB", "FAIRLEDGER_NOW", "FAIRLEDGER_SHIM_SERVER")
    }
    env.update(
        PYTHONPATH=str(REPO),
        FAIRLEDGER_SHIM_STATE=str(tmp_path / "db-path"),
        FAIRLEDGER_SHIM_LOG=str(tmp_path / "notes.log"),
        FAIRLEDGER_SHIM_STEP="7",
    )
    return subprocess.run(
        [sys.executable, "-m", "tests.flux_sharness.shim", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_commands_without_a_path_go_to_the_database_create_db_named(tmp_path: Path) -> None:
    db = tmp_path / "FluxAccountingTest.db"
    assert _flux(tmp_path, "account", "-p", str(db), "create-db").returncode == 0
    assert _flux(tmp_path, "account", "add-bank", "root", "1").returncode == 0
    shown = _flux(tmp_path, "account", "view-bank", "root")
    assert shown.returncode == 0, shown.stderr
    assert [row["bank"] for row in json.loads(shown.stdout)] == ["root"]
    # The service's -p names the database too, and is noted as Flux's.
    other = tmp_path / "other.db"
    assert _flux(tmp_path, "account", "-p", str(other), "create-db").returncode == 0
    assert _flux(tmp_path, "account-service", "-p", str(db), "-t").returncode == 0
    assert _flux(tmp_path, "account", "view-bank", "root").returncode == 0
    notes = (tmp_path / "notes.log").read_text().splitlines()
    assert notes[0].startswith(f"7\t{shim.KIND_FLUX}\tflux account-service")


def test_flux_only_commands_fail_and_are_noted(tmp_path: Path) -> None:
    done = _flux(tmp_path, "jobtap", "load", "mf_priority.so")
    assert done.returncode == 1
    assert shim.NEEDS_FLUX in done.stderr
    assert (tmp_path / "notes.log").read_text() == (
        f"7\t{shim.KIND_FLUX}\tflux jobtap load mf_priority.so\n"
    )


def test_classification() -> None:
    flux_note = [(shim.KIND_FLUX, "flux submit")]
    tables_note = [(shim.KIND_TABLES, "flux python insert_jobs.py")]
    assert runner.classify("tX", 1, "t", True, []).outcome == runner.PASSED
    assert runner.classify("tX", 1, "t", False, []).outcome == runner.INTERFACE
    # A step that ran a Flux-only command counts as needing Flux even when it passed.
    assert runner.classify("tX", 1, "t", True, flux_note).outcome == runner.NEEDS_FLUX
    assert runner.classify("tX", 1, "t", False, flux_note).outcome == runner.NEEDS_FLUX
    assert runner.classify("tX", 1, "t", True, tables_note).outcome == runner.DELIBERATE
    after = runner.classify("t1046-issue565", 10, "t", False, [])
    assert after.outcome == runner.NEEDS_FLUX
    assert runner.classify("t1017-update-db", 14, "t", False, []).outcome == runner.DELIBERATE
