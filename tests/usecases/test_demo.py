"""The demo's transcript from the use case itself: each command announced before its result."""

from __future__ import annotations

import os
from pathlib import Path

from ledger.store.connections import parse_store_url
from ledger.usecases import demo
from ledger.usecases.session import Session
from tests.conftest import T0


def test_the_demo_announces_each_command_before_its_result(tmp_path: Path) -> None:
    s = Session(f"sqlite:///{tmp_path / 'demo.db'}", str(T0))
    try:
        steps = list(demo.run_demo(s, weeks=2, seed=7))
    finally:
        s.close()
    kinds = [
        step.command if isinstance(step, demo.Running) else type(step).__name__ for step in steps
    ]
    assert kinds == [
        "LedgerMade",
        "Section",
        "ingest week1.jsonl",
        "JobsIngested",
        "update-fshare",
        "FairshareUpdated",
        "Section",
        "edit-bank cs --shares 40 --reason 'cs allocation doubled'",
        "edit-user alice --max-running-jobs 10 --reason 'paper deadline'",
        "ingest week2.jsonl",
        "JobsIngested",
        "update-fshare",
        "FairshareUpdated",
        "Section",
        "view-bank root --tree --as-of 1w",
        "BankTree",
        "view-bank root --tree",
        "BankTree",
        "history --user alice",
        "History",
        "verify",
        "Verified",
        # the Slurm site, in its own ledger
        "SlurmSection",
        "create-db --fairshare-algorithm fair-tree",
        "LedgerMade",
        "edit-config timezone=America/Chicago",
        "import-slurm tux.cfg --conf tux.conf",
        "SlurmImported",
        "ingest --format sacct tux-week.sacct",
        "JobsIngested",
        "update-fshare",
        "FairshareUpdated",
        "sshare -a -l",
        "Sshare",
        "sshare -a -l --algorithm classic",
        "Sshare",
        "sprio -l --jobs pending.jsonl",
        "Sprio",
        "explain-job 4000",
        "SlurmExplained",
        "history --config",
        "History",
        "verify",
        "Verified",
    ]
    weeks = [step for step in steps if isinstance(step, demo.Section)]
    assert [(w.week, w.at) for w in weeks] == [(1, T0 - demo.WEEK), (2, T0), (None, None)]
    ingested = [step.result for step in steps if isinstance(step, demo.JobsIngested)]
    assert [(r.recorded, r.duplicate, r.unmatched) for r in ingested] == [
        (500, 0, 0),
        (500, 0, 0),
        (120, 0, 0),  # the Slurm site's week
    ]
    slurm = [step for step in steps if isinstance(step, demo.SlurmSection)][0]
    assert (slurm.where, slurm.at) == (f"sqlite:///{tmp_path / 'demo-slurm.db'}", T0)
    previews = [step.answer for step in steps if isinstance(step, demo.Sshare)]
    assert [(a.algorithm, a.previewed) for a in previews] == [
        ("fair-tree", False),
        ("classic", True),
    ]
    trees = [step for step in steps if isinstance(step, demo.BankTree)]
    assert [len(t.members) for t in trees] == [12, 12]
    assert trees[0].members != trees[1].members  # a week of usage apart
    history, config = [step for step in steps if isinstance(step, demo.History)]
    assert len(history.entries) == 2  # alice added, then her limit raised
    # The Slurm site's policy: its creation, the timezone, then its slurm.conf: four settings
    # (TRES weights, reset period, the cluster's nodes and CPUs), five weights and the two
    # partitions with their billing weights.
    assert [e.action for e in config.entries] == [
        "create-db",
        *["edit-config"] * 5,
        *["edit-factor"] * 5,
        "add-queue",
        "add-queue",
    ]


def test_the_slurm_site_lives_beside_the_flux_one() -> None:
    """The store of the demo's Slurm site (README: make demo)."""
    sqlite = parse_store_url("sqlite:///demo/fairledger.db")
    assert demo.slurm_store(sqlite).path == os.path.abspath("demo/fairledger-slurm.db")
    pg = parse_store_url("postgresql://u@h:5432/db?schema=acct")
    assert demo.slurm_store(pg).describe() == "postgresql://u@h:5432/db?schema=acct_slurm"
    longest = parse_store_url("postgresql://u@h:5432/db?schema=" + "s" * 63)
    assert demo.slurm_store(longest).schema == "s" * 57 + "_slurm"  # PostgreSQL's 63
