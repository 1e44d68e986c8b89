"""fetch-job-records records through ingest's exactly-once path (recorded Flux responses)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli import fetch
from cli.main import cli
from tests.conftest import T0, Store
from tests.unit.test_flux_transport import RecordedJobList


def test_fetched_jobs_are_recorded_once(ledger_store: Store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    ledger_store.run("add-bank", "root", "1")
    ledger_store.run("add-bank", "A", "1", "--parent-bank", "root")
    ledger_store.run("add-user", "-u", "u5011", "-i", "5011", "-B", "A")
    ledger_store.run("add-user", "-u", "u5012", "-i", "5012", "-B", "A")
    source = RecordedJobList()
    monkeypatch.setattr(fetch, "connect", lambda: source)
    now = str(T0 + 1000)
    for expected in (
        "recorded 2, duplicate 0, unmatched 0",
        "recorded 0, duplicate 2, unmatched 0",
    ):
        result = CliRunner().invoke(
            cli,
            ["--db", ledger_store.url, "--now", now, "fetch-job-records"],
            prog_name="fairledger",
        )
        assert result.exit_code == 0, result.output
        assert expected in result.stdout
    # The second fetch asked from an hour before the newest recorded job, not after it.
    assert source.asked_since == [0.0, 1700000410.0 - 3600]
    rows = json.loads(ledger_store.run("view-job-records", "--json", now=now).stdout)
    assert [(r["userid"], r["nnodes"], r["bank"]) for r in rows] == [
        (5011, 2, "A"),
        (5012, 1, None),
    ]
    ledger_store.run("update-usage", now=now)
    users = {
        r["username"]: r["job_usage"]
        for r in json.loads(ledger_store.run("list-users", "--json", now=now).stdout)
    }
    assert users == {"u5011": round(2 * (1700000161.6 - 1700000101.5), 5), "u5012": 100.0}
