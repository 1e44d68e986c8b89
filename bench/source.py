"""The code a benchmark measures: its own tree, in every process it starts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure_this_tree() -> None:
    """Put this tree first on the module path of every process started from now on. The
    virtualenv's `fairledger` script is an editable install, which loads the tree it was
    installed from: a bench run from a git worktree sharing that virtualenv measured the other
    tree's code in its CLI steps and its own in the steps it runs in process."""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def fairledger_command() -> list[str]:
    """How a bench starts this tree's `fairledger`: the virtualenv's script (measure_this_tree
    makes it load this tree), or the module where there is no script."""
    script = Path(sys.executable).parent / "fairledger"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]


def fairledger(url: str, *args: str, now: float, command: list[str] | None = None) -> list[str]:
    """`fairledger --db URL --now NOW ARGS...`; `command` in place of fairledger_command()."""
    return [*(command or fairledger_command()), "--db", url, "--now", f"{now:.3f}", *args]
