"""The code a benchmark measures: its own tree, in every process it starts."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure_this_tree() -> None:
    """Put this tree first on the module path of every process started from now on. The
    virtualenv's `fairledger` script is an editable install, which loads the tree it was
    installed from: a bench run from a git worktree sharing that virtualenv measured the other
    tree's code in its CLI steps and its own in the steps it runs in process."""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
