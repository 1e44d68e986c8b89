"""sprio's input (ledger.slurm.pending_jobs): JSON lines and squeue's JSON, old and new."""

from __future__ import annotations

import json

import pytest

from ledger.errors import InvalidValue
from ledger.slurm.pending_jobs import HELD, JSON_LINES, SQUEUE_JSON, parse_pending_jobs


def test_json_lines_defaults_aliases_and_tres() -> None:
    text = (
        '{"job_id": 5, "username": "amy", "bank": "physics", "queue": "a, b", "submit_time": 100,'
        ' "min_nodes": 2, "tres": "cpu=4,mem=2G,gres/gpu=1"}\n'
        "\n"
        '{"job_id": 6, "user": "bob", "submit_time": 100, "eligible_time": 200,'
        ' "tres": {"Mem": 512}}\n'
    )
    parsed = parse_pending_jobs(text)
    assert parsed.source == JSON_LINES and parsed.skipped == {}
    first, second = parsed.jobs
    assert (first.user, first.account, first.partitions, first.qos) == (
        "amy",
        "physics",
        ("a", "b"),
        (),
    )
    # Eligible at submission, accruing from then; mem in MiB (the type lower-cased: "Mem").
    assert (first.submit, first.eligible, first.accrue, first.nodes) == (100, 100, 100, 2)
    assert first.tres == {"cpu": 4, "mem": 2048, "gres/gpu": 1}
    assert (second.eligible, second.accrue, second.where) == (200, 200, "jobs line 3")
    assert second.tres == {"mem": 512}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"job_id": 1, "user": "a", "submit_time": 1, "colour": 2}', "jobs line 1: colour:"),
        ('{"job_id": 1, "user": "a", "username": "b", "submit_time": 1}', "give user or username"),
        ('{"job_id": 1, "user": "a", "submit_time": 1, "cpus": 1.5}', "jobs line 1: cpus:"),
        ('{"job_id": 1, "user": "a", "submit_time": 1, "tres": "mem=0.5K"}', "not a whole count"),
        ("[1, 2]", "jobs line 1: a pending job must be a JSON object"),
    ],
)
def test_json_line_refusals(text: str, message: str) -> None:
    with pytest.raises(InvalidValue, match=message):
        parse_pending_jobs(text)


def test_squeue_json_new_and_old_shapes() -> None:
    document = {
        "jobs": [
            {  # data_parser v0.0.40+: {"set", "infinite", "number"} and a state list
                "job_id": 11,
                "user_name": "amy",
                "partition": "batch",
                "job_state": ["PENDING", "REQUEUED"],
                "submit_time": {"set": True, "infinite": False, "number": 100},
                "eligible_time": {"set": True, "infinite": False, "number": 150},
                "accrue_time": {"set": False, "infinite": False, "number": 0},
                "node_count": {"set": True, "infinite": False, "number": 3},
                "cpus": {"set": True, "infinite": False, "number": 12},
                "time_limit": {"set": True, "infinite": True, "number": 0},
                "nice": -7,
                "tres_req_str": "cpu=12,mem=1G,node=3",
            },
            {  # older: plain numbers and a state string
                "job_id": 12,
                "user_name": "bob",
                "job_state": "PENDING",
                "submit_time": 100,
                "eligible_time": 0,
                "time_limit": 30,
            },
            {"job_id": 13, "user_name": "c", "job_state": ["RUNNING"]},
            {"job_id": 14, "user_name": "c", "job_state": ["PENDING"], "hold": True},
            {"job_id": 15, "user_name": "c", "job_state": ["COMPLETED"]},
        ]
    }
    parsed = parse_pending_jobs(json.dumps(document))
    assert parsed.source == SQUEUE_JSON
    assert parsed.skipped == {"RUNNING": 1, "COMPLETED": 1, HELD: 1}
    new, old = parsed.jobs
    # Not accruing (accrue_time unset): accrue None; an UNLIMITED time limit is none.
    assert (new.eligible, new.accrue, new.nodes, new.cpus, new.time_limit, new.nice) == (
        150, None, 3, 12, None, -7
    )  # fmt: skip
    assert new.tres == {"cpu": 12, "mem": 1024, "node": 3}
    assert (old.eligible, old.time_limit, old.nodes, old.account) == (None, 30, 1, None)


def test_squeue_refusals() -> None:
    bad = {"jobs": [{"job_id": 3, "user_name": "a", "job_state": ["PENDING"]}]}
    with pytest.raises(InvalidValue, match=r"^squeue jobs\[0\] \(job 3\): submit_time is not set$"):
        parse_pending_jobs(json.dumps(bad))
    with pytest.raises(InvalidValue, match="'jobs' is not a list"):
        parse_pending_jobs('{"jobs": 3}')
