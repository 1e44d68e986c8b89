"""The README's "By hand" block runs verbatim, as a newcomer would paste it into a shell."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def by_hand_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^By hand\b.*?```sh\n(.*?)```", readme, re.S | re.M)
    assert found, "README.md has no 'By hand' shell block"
    return found.group(1)


@pytest.mark.slow
def test_the_readme_by_hand_block_runs_verbatim(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAIRLEDGER_")}
    # The `fairledger` script installed beside this interpreter, as `make` installs it.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        ["bash", "-e", "-c", by_hand_block()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"created ledger at sqlite:///{tmp_path / 'site.db'}\n")
    assert "recorded 8, duplicate 0, unmatched 0" in done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    users = {row[1]: row for row in rows if len(row) == 6 and row[0] in ("physics", "chemistry")}
    assert set(users) == {"alice", "bob", "carol"}
    # Every user has usage from the sample jobs and a fair-share from update-fshare.
    assert all(float(row[4]) > 0 and 0 < float(row[5]) <= 1 for row in users.values())
    assert "add-bank physics: parent_bank root, shares 50" in done.stdout
    assert "(allocation 2026)" in done.stdout
    assert (tmp_path / "site.db").exists()


def test_the_readme_names_every_command() -> None:
    """The command table (or the text around it) names each command, so a new one cannot be
    left out of it."""
    from cli.commands import INDEX

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [n for n in INDEX if f"`{n}" not in readme and f"`fairledger {n}" not in readme]
    assert missing == []
