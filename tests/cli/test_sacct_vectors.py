"""The three vectors of Slurm's testsuite (research slurm.md §8: test24.1, test24.4, test_130_2)
row for row through jobs ingested from a sacct file, on both stores: import-slurm of the dump
(the tree only), `ingest --format sacct` of one job per user association, update-fshare, then
`sshare -a -l -P` against tests/data/slurm/<vector>.json.

Each job runs on one CPU (no billing weights: billing = its CPUs) for exactly its association's
RawUsage in seconds, ending at T0, so with half-life 0 (no decay, as the harnesses run; Slurm
then needs a reset period, here DAILY) its usage at T0 is the vector's RawUsage. A RawUsage of 0
is a job that ran no time. The site's zone is America/Chicago: in November it is UTC-6, so T0
(2023-11-14T22:13:20Z) is 16:13:20 local, worked out by hand, and the day's reset (06:00Z) is
long before every job's start.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.cli.test_slurm_import import sshare_rows
from tests.conftest import DATA, T0, Store

SLURM = DATA / "slurm"
ZONE = "America/Chicago"
END = "2023-11-14T16:13:20"  # T0 in ZONE
HEADER = "JobIDRaw|JobID|Cluster|User|Account|Partition|State|Start|End|NCPUS|AllocTRES"
# Slurm's own algorithm for each vector (docs/slurm-fairshare.md).
ALGORITHMS = {"test24_1": "classic", "test24_4": "fair-tree", "test_130_2": "classic"}


def vector(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SLURM / f"{name}.json").read_text())
    return data


def start_of(seconds: int) -> str:
    """END less `seconds` (under a minute in every vector), as sacct prints a local time."""
    assert 0 <= seconds < 60
    minute, second = (13, 20 - seconds) if seconds <= 20 else (12, 80 - seconds)
    return f"2023-11-14T16:{minute:02d}:{second:02d}"


def sacct_file(data: dict[str, Any], path: Path) -> Path:
    lines = [HEADER]
    for n, (user, account, _shares, usage) in enumerate(data["users"], start=1):
        fields = [str(n), str(n), "test", user, account.lower(), "batch", "COMPLETED"]
        fields += [start_of(int(usage)), END, "1", "billing=1,cpu=1,mem=100M,node=1"]
        lines.append("|".join(fields))
    # sacct's step lines sit beside their job; they are skipped, never charged twice
    lines.append("1.batch|1.batch|test|||batch|COMPLETED|" + f"{start_of(20)}|{END}|1|cpu=1")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_start_of_is_the_end_less_the_seconds() -> None:
    assert datetime.fromisoformat(END).replace(tzinfo=ZoneInfo(ZONE)).timestamp() == T0
    assert start_of(0) == END
    assert start_of(20) == "2023-11-14T16:13:00"
    assert start_of(25) == "2023-11-14T16:12:55"


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_the_vectors_row_for_row_through_a_sacct_file(
    store: Store, tmp_path: Path, name: str
) -> None:
    data = vector(name)
    store.run("create-db", "--fairshare-algorithm", ALGORITHMS[name])
    store.run(
        "edit-config",
        "priority_decay_half_life=0",
        "priority_usage_reset_period=DAILY",
        f"timezone={ZONE}",
    )
    store.run("import-slurm", str(SLURM / f"{name}.cfg"))
    jobs = sacct_file(data, tmp_path / "sacct.txt")
    report = store.run("ingest", "--format", "sacct", str(jobs)).stdout
    recorded = len(data["users"])
    assert report == f"recorded {recorded}, duplicate 0, unmatched 0, skipped 1 (steps 1)\n"
    store.run("update-fshare")
    rows = sshare_rows(store, data["columns"])
    # root, every account and every user association, each once
    assert len(rows) == 1 + len(data["accounts"]) + len(data["users"])
    for expected in data["expected"]:
        fields = expected.split("|")
        fields[0] = fields[0].lower()  # sacctmgr stores account names lower-cased
        wanted = "|".join(fields).removesuffix("|")
        # test24.1's expected lines stop after FairShare (its test matched a prefix)
        assert rows[(fields[0], fields[1])].startswith(wanted), (expected, rows)
