"""What an installed fairledger says about itself: its version, its metadata, matplotlib only as
the `plot` extra (and one line when --plot finds it missing), and edit-config's help on what a
config change recomputes."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from tests.cli.test_explain import LATER, history
from tests.conftest import Store

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_the_installed_distributions() -> None:
    result = CliRunner().invoke(cli, ["--version"], prog_name="fairledger")
    assert result.exit_code == 0
    assert result.stdout == f"fairledger {version('fairledger')}\n"
    assert re.fullmatch(r"fairledger \d+\.\d+\.\d+\S*\n", result.stdout)


def test_metadata_names_the_readme_and_keeps_matplotlib_an_extra() -> None:
    project = PYPROJECT["project"]
    assert project["readme"] == "README.md" and (ROOT / "README.md").is_file()
    assert not any(d.startswith("matplotlib") for d in project["dependencies"])
    assert [d.split(">")[0] for d in project["optional-dependencies"]["plot"]] == ["matplotlib"]


def test_make_installs_the_plot_extra_for_test_and_demo() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[dev,plot]'" in makefile


def test_plot_without_matplotlib_is_one_line(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history(store)
    # A None entry makes `import matplotlib` raise ImportError, as on a host without it.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    chart = tmp_path / "alice.png"
    result = store.run(
        "report", "fairshare-history", "--user", "alice", "--plot", str(chart), now=LATER, expect=1
    )
    assert result.stderr == (
        "fairledger: --plot needs matplotlib: pip install 'fairledger[plot]'\n"
    )
    assert result.stdout == "" and not chart.exists()
    # Without --plot the report needs no matplotlib.
    store.run("report", "fairshare-history", "--user", "alice", now=LATER)


def test_edit_config_help_says_what_is_recomputed_and_what_is_not() -> None:
    result = CliRunner().invoke(cli, ["edit-config", "--help"], prog_name="fairledger")
    text = " ".join(result.stdout.split())
    assert (
        "Recomputed: priority_decay_half_life, priority_usage_reset_period and decay_factor: "
        "usage from the change on is recomputed from the stored jobs with the new values"
    ) in text
    assert (
        "Not recomputed: node_weight, core_weight and gpu_weight price each job when it is "
        "recorded; a new weight prices only the jobs recorded after it, never history."
    ) in text
