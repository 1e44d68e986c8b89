"""jobs USERNAME: live jobs from a (fake) Flux job-list with their priority's factors, in
flux-accounting's columns, on both stores."""

from __future__ import annotations

from typing import Any

import pytest

from cli import live_jobs
from ledger.flux_accounting.transport import FluxUnavailable, LiveJobQuery
from tests.conftest import T0, Store, create_ledger, refusal
from tests.templates import built


class FakeJobList:
    """job-list's answer for user1: two jobs in bank A (one in queue gold), one in B."""

    def __init__(self) -> None:
        self.asked: list[LiveJobQuery] = []

    def live_jobs(self, query: LiveJobQuery) -> list[dict[str, Any]]:
        self.asked.append(query)
        jobs = [
            {"id": 65535, "username": "user1", "bank": "A", "queue": "gold", "urgency": 16,
             "priority": 50500, "fairshare": 0.5},
            {"id": 1, "username": "user1", "bank": "A", "queue": "", "urgency": 20,
             "priority": 50004, "fairshare": 0.5},
            {"id": 2, "username": "user1", "bank": "B", "queue": "", "urgency": 16,
             "priority": 100000, "fairshare": 1.0},
        ]  # fmt: skip
        if query.ids:
            jobs = [j for j in jobs if j["id"] in query.ids]
        return jobs[: query.max_entries or None]


@pytest.fixture
def job_list(monkeypatch: pytest.MonkeyPatch) -> FakeJobList:
    fake = FakeJobList()
    monkeypatch.setattr(live_jobs, "connect", lambda: fake)
    return fake


def site(store: Store) -> None:
    built(store, _site)


def _site(store: Store) -> None:
    create_ledger(store)
    store.run("add-bank", "root", "1")
    store.run("add-bank", "A", "1", "--parent-bank", "root")
    store.run("add-bank", "B", "1", "--parent-bank", "root", "--priority", "2.5")
    store.run("add-queue", "gold", "--priority", "500")
    store.run("add-user", "-u", "user1", "-i", "5001", "-B", "A", "-q", "gold")
    store.run("add-user", "-u", "user1", "-i", "5001", "-B", "B")


HEADER = (
    "JOBID          USER     BANK    BANKPRIO  BANKFACT  QUEUE   QPRIO  QFACT  "
    "FAIRSHARE FSFACTOR  URGENCY URGFACT PRIORITY"
)


def test_table(store: Store, job_list: FakeJobList) -> None:
    site(store)
    out = store.run("jobs", "user1").stdout
    # Default weights: fairshare 100000, queue 10000, bank 0, urgency 1000.
    assert out == (
        f"{HEADER}\n"
        "ƒLUv           user1    A       0.0       0         gold    500    10000  "
        "0.5       100000    16      1000    50500   \n"
        "ƒ2             user1    A       0.0       0                 0      10000  "
        "0.5       100000    20      1000    50004   \n"
        "ƒ3             user1    B       2.5       0                 0      10000  "
        "1.0       100000    16      1000    100000  \n"
    )
    assert job_list.asked == [LiveJobQuery("user1", None, 0.0, 0, (), ())]


def test_filters_reach_job_list_and_bank_filters_here(store: Store, job_list: FakeJobList) -> None:
    site(store)
    out = store.run(
        "jobs", "user1", "--bank", "B", "--queue", "gold", "-f", "pending,running",
        "-c", "5", "--since", str(T0 - 60), "-j", "ƒ3", "-j", "65535",
    ).stdout  # fmt: skip
    assert out.splitlines()[1:] == [
        "ƒ3             user1    B       2.5       0                 0      10000  "
        "1.0       100000    16      1000    100000  "
    ]
    assert job_list.asked == [
        LiveJobQuery("user1", "gold", T0 - 60.0, 5, (2, 65535), ("pending", "running"))
    ]


def test_format_and_verbose(store: Store, job_list: FakeJobList) -> None:
    site(store)
    out = store.run("jobs", "user1", "-o", "{JOBID}|{QPRIO}|{PRIORITY:>7}", "-c", "1").stdout
    assert out == "JOBID|QPRIO|PRIORITY\nƒLUv|500|  50500\n"
    verbose = store.run("jobs", "user1", "-v", "-j", "1").stdout
    assert verbose == (
        "ƒ2\n"
        "= (FAIRSHARE * FAIRSHARE_WEIGHT) + (QUEUE_PRIORITY * QUEUE_WEIGHT) + "
        "(BANK_PRIORITY * BANK_WEIGHT) + (URGENCY_WEIGHT * (URGENCY - 16))\n"
        "= (0.5 * 100000) + (0 * 10000) + (0.0 * 0) + (1000 * (20 - 16))\n"
        "= 50000.0 + 0 + 0.0 + 4000\n"
        "= 50004\n"
        "\n"
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["nobody"], 1, refusal("jobs", "could not find entry for nobody in association_table")),
        (["user1", "--bank", "C"], 1, "could not find entry for user1 in association_table"),
        (["user1", "-o", "{NOPE}"], 1, "Invalid column name in format string: NOPE. Available"),
        (["user1", "-j", "zz"], 2, "invalid job ID 'zz'"),
        (["user1", "-c", "-1"], 2, "-1 is not in the range x>=0"),
        (["user1", "--since", str(T0 + 3600)], 1, "--since appears to be in the future"),
    ],
)
def test_errors(
    store: Store, job_list: FakeJobList, args: list[str], code: int, message: str
) -> None:
    site(store)
    result = store.run("jobs", *args, expect=code)
    assert result.stdout == ""
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_no_flux_here_is_one_line(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    site(store)

    def unavailable() -> None:
        raise FluxUnavailable("the flux Python module is not importable")

    monkeypatch.setattr(live_jobs, "connect", unavailable)
    result = store.run("jobs", "user1", expect=1)
    assert result.stderr == "fairledger: the flux Python module is not importable\n"
