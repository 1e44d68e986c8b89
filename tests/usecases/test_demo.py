"""The demo's transcript from the use case itself: each command announced before its result."""

from __future__ import annotations

from pathlib import Path

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
    ]
    weeks = [step for step in steps if isinstance(step, demo.Section)]
    assert [(w.week, w.at) for w in weeks] == [(1, T0 - demo.WEEK), (2, T0), (None, None)]
    ingested = [step.result for step in steps if isinstance(step, demo.JobsIngested)]
    assert [(r.recorded, r.duplicate, r.unmatched) for r in ingested] == [(500, 0, 0)] * 2
    trees = [step for step in steps if isinstance(step, demo.BankTree)]
    assert [len(t.members) for t in trees] == [12, 12]
    assert trees[0].members != trees[1].members  # a week of usage apart
    history = [step for step in steps if isinstance(step, demo.History)][0]
    assert len(history.entries) == 2  # alice added, then her limit raised
