"""priority-update's RPC sequence and fetch-job-records' mapping, with a recording transport
and recorded job-list responses (no Flux needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.flux_accounting.payloads import payloads
from ledger.flux_accounting.transport import fetch_records, send_priority_update

DATA = Path(__file__).resolve().parents[1] / "data" / "flux"


class RecordingTransport:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, bool]] = []

    def rpc(self, topic: str, payload: Any, wait: bool = True) -> None:
        self.sent.append((topic, payload, wait))

    def owner(self) -> tuple[int, str]:
        return (4242, "flux")


class RecordedJobList:
    def __init__(self) -> None:
        self.jobs = json.loads((DATA / "job_list_inactive.json").read_text())
        self.lookups = json.loads((DATA / "kvs_lookups.json").read_text())
        self.asked_since: list[float] = []

    def inactive_jobs(self, since: float) -> list[dict[str, Any]]:
        self.asked_since.append(since)
        return [j for j in self.jobs if j["t_inactive"] > since]

    def lookup(self, job_id: int) -> dict[str, Any]:
        return dict(self.lookups[str(job_id)])


def _sample() -> dict[str, dict[str, Any]]:
    assoc = {
        "userid": 1,
        "bank": "A",
        "default_bank": "A",
        "fairshare": 0.5,
        "max_running_jobs": 5,
        "max_active_jobs": 7,
        "max_nodes": 9,
        "max_cores": 9,
        "queues": "",
        "active": 1,
        "projects": "*",
        "default_project": "*",
        "max_sched_jobs": 9,
    }
    return payloads(
        [assoc],
        [],
        [{"project": "*"}],
        [{"bank": "A", "priority": 0.0}],
        [{"factor": "fairshare", "weight": 100000}],
        {"deny_unknown_queues": "true"},
    )


def test_priority_update_sends_flux_accountings_sequence() -> None:
    transport = RecordingTransport()
    sent = _sample()
    topics = send_priority_update(transport, sent)
    assert topics == [
        "rec_update",
        "rec_q_update",
        "rec_proj_update",
        "rec_bank_update",
        "rec_fac_update",
        "rec_config_update",
        "reprioritize",
        "rec_update",
    ]
    assert [t for t, _, _ in transport.sent] == [f"job-manager.mf_priority.{t}" for t in topics]
    assert transport.sent[0][1] == sent["rec_update"]
    assert transport.sent[5][1] == {"data": {"deny_unknown_queues": True}}
    assert transport.sent[6] == ("job-manager.mf_priority.reprioritize", None, False)
    owner = transport.sent[7][1]["data"][0]
    assert (owner["userid"], owner["bank"], owner["def_bank"], owner["max_running_jobs"]) == (
        4242,
        "flux",
        "flux",
        1000000,
    )


def test_fetch_maps_job_list_and_kvs_to_records() -> None:
    records = fetch_records(RecordedJobList(), since=0.0)
    # The job that never ran (t_run 0, no R) is skipped, as flux-accounting does.
    assert [r["id"] for r in records] == [1035993858048, 1035993858050]
    first = records[0]
    assert (first["userid"], first["t_run"], first["t_inactive"]) == (
        5011,
        1700000101.5,
        1700000161.6,
    )
    assert (first["bank"], first["queue"], first["project"], first["requested_duration"]) == (
        "A",
        "batch",
        "climate",
        3600.0,
    )
    assert json.loads(first["R"])["execution"]["R_lite"][0]["rank"] == "0-1"
    assert "bank" not in records[1] and "requested_duration" not in records[1]
