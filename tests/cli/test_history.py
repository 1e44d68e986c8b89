"""`history` on both stores: who changed what, when and why, old → new, one line per event."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator

import pytest

import ledger.store.application
from projections.queries import history as history_queries
from tests.builders import job_line
from tests.conftest import PG_URL, REQUIRE_PG, T0, Store, _pg_reachable

OPS = ("--actor", "ops")


def job(job_id: int, user: str, bank: str, end: float, seconds: float) -> str:
    return job_line(job_id, user=user, bank=bank, end=end, seconds=seconds)


def build(store: Store) -> None:
    """T0 the site; T0+100 two jobs; T0+200 fair-share; T0+300 edits; T0+350 alice joins B;
    T0+400 carol added, bank B removed (--force) with bob/B and alice/B; T0+450 project p1
    deleted; T0+500 fair-share again; T0+550 A's usage cleared."""
    store.run("create-db", "--actor", "admin", "--reason", "setup")
    store.run("add-bank", "root", "1", *OPS)
    store.run("add-bank", "A", "1", "--parent-bank", "root", *OPS, "--reason", "new group")
    store.run("add-bank", "B", "1", "--parent-bank", "root", *OPS)
    store.run("add-queue", "gold", "--priority", "100", *OPS)
    store.run("add-project", "p1", *OPS)
    store.run("add-user", "-u", "alice", "-B", "A", "-i", "1001", "--queues", "gold", *OPS)
    store.run("add-user", "-u", "bob", "-B", "B", "-i", "1002", *OPS)
    jobs = job(1, "alice", "A", T0 + 90, 80) + "\n" + job(2, "bob", "B", T0 + 95, 10) + "\n"
    store.run("ingest", "-", "--actor", "cron", input=jobs, now=T0 + 100)
    store.run("update-fshare", "--actor", "cron", now=T0 + 200)
    store.run("edit-bank", "A", "--shares", "10", *OPS, "--reason", "grant #12", now=T0 + 300)
    store.run("edit-queue", "gold", "--priority", "5", *OPS, now=T0 + 300)
    store.run("edit-factor", "--factor", "queue", "--weight", "500", *OPS, now=T0 + 300)
    store.run("edit-config", "decay_factor=0.25", *OPS, "--reason", "faster", now=T0 + 300)
    store.run("add-user", "-u", "alice", "-B", "B", "--shares", "3", *OPS, now=T0 + 350)
    store.run("edit-user", "alice", "--default-bank", "B", *OPS, now=T0 + 360)
    store.run("add-user", "-u", "carol", "-B", "A", "-i", "1003", *OPS, now=T0 + 400)
    store.run("delete-bank", "B", "--force", *OPS, "--reason", "closed", now=T0 + 400)
    store.run("delete-project", "p1", *OPS, now=T0 + 450)
    store.run("update-fshare", "--actor", "cron", now=T0 + 500)
    store.run("clear-usage", "A", "--ignore-older-than", str(T0 + 50), *OPS, now=T0 + 550)


def built_store(
    request: pytest.FixtureRequest,
    factory: pytest.TempPathFactory,
    builder: Callable[[Store], None],
) -> Iterator[Store]:
    """conftest's `store`, once per module: the tests only read the history `builder` made."""
    if request.param == "sqlite":
        store = Store("sqlite", f"sqlite:///{factory.mktemp('ledger') / 'ledger.db'}")
        builder(store)
        yield store
        return
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {problem}")
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = Store("postgres", f"{PG_URL.split('?')[0]}?schema={schema}")
    try:
        builder(store)
        yield store
    finally:
        with psycopg.connect(PG_URL.split("?")[0], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    yield from built_store(request, tmp_path_factory, build)


PG_ROLE = re.compile(r"^(\S+)  postgres \(on behalf of ([^)]+)\)  ")


def lines(store: Store, *args: str, now: float = T0 + 600) -> list[str]:
    """The history, each line's actor as --actor gave it: on PostgreSQL every line records the
    session's role (postgres) acting on behalf of that --actor, checked here and then folded
    back, so that one expectation serves both stores."""
    out = store.run("history", *args, now=now).stdout.splitlines()
    if store.kind != "postgres":
        return out
    assert all(PG_ROLE.match(line) for line in out), out
    return [PG_ROLE.sub(r"\1  \2  ", line) for line in out]


CREATED = (
    "2023-11-14T22:13:20+00:00  admin  create-db: epoch 2023-11-14T22:13:20+00:00, "
    "config.priority_usage_reset_period 2419200, config.priority_decay_half_life 604800, "
    "config.decay_factor 0.5, config.node_weight 1.0, config.core_weight 0.0, "
    "config.gpu_weight 0.0, config.deny_unknown_queues false, factor.fairshare 100000, "
    "factor.queue 10000, factor.bank 0, factor.urgency 1000  (setup)"
)
EVERYTHING = [
    CREATED,
    "2023-11-14T22:13:20+00:00  admin  add-project *  (setup)",
    '2023-11-14T22:13:20+00:00  ops  add-bank root: parent_bank "", shares 1, priority 0.0',
    "2023-11-14T22:13:20+00:00  ops  add-bank A: parent_bank root, shares 1, priority 0.0"
    "  (new group)",
    "2023-11-14T22:13:20+00:00  ops  add-bank B: parent_bank root, shares 1, priority 0.0",
    "2023-11-14T22:13:20+00:00  ops  add-queue gold: priority 100",
    "2023-11-14T22:13:20+00:00  ops  add-project p1",
    "2023-11-14T22:13:20+00:00  ops  add-user alice/A: userid 1001, shares 1, queues gold, "
    "default_bank A",
    "2023-11-14T22:13:20+00:00  ops  add-user bob/B: userid 1002, shares 1, default_bank B",
    "2023-11-14T22:15:00+00:00  cron  ingest: recorded 2 jobs",
    "2023-11-14T22:16:40+00:00  cron  update-fshare",
    "2023-11-14T22:18:20+00:00  ops  edit-bank A: shares 1 → 10  (grant #12)",
    "2023-11-14T22:18:20+00:00  ops  edit-queue gold: priority 100 → 5",
    "2023-11-14T22:18:20+00:00  ops  edit-factor queue: weight 10000 → 500",
    "2023-11-14T22:18:20+00:00  ops  edit-config decay_factor: value 0.5 → 0.25  (faster)",
    "2023-11-14T22:19:10+00:00  ops  add-user alice/B: userid 1001, shares 3",
    "2023-11-14T22:19:20+00:00  ops  edit-user alice: default_bank A → B",
    "2023-11-14T22:20:00+00:00  ops  add-user carol/A: userid 1003, shares 1, default_bank A",
    "2023-11-14T22:20:00+00:00  ops  remove-bank B: users alice/B, bob/B; "
    "default_bank alice B → A  (closed)",
    "2023-11-14T22:20:50+00:00  ops  delete-project p1",
    "2023-11-14T22:21:40+00:00  cron  update-fshare",
    "2023-11-14T22:22:30+00:00  ops  clear-usage A: ignore_older_than 2023-11-14T22:14:10+00:00; "
    "users alice/A, carol/A",
]


def test_every_event_in_order_all_is_the_default(site: Store) -> None:
    assert lines(site) == EVERYTHING
    assert lines(site, "--all") == EVERYTHING


def test_each_selector(site: Store) -> None:
    assert lines(site, "--bank", "A") == [EVERYTHING[3], EVERYTHING[11], EVERYTHING[21]]
    # A removed bank still has its history.
    assert lines(site, "--bank", "B") == [EVERYTHING[4], EVERYTHING[18]]
    assert lines(site, "--user", "alice") == [
        EVERYTHING[7],
        EVERYTHING[15],
        EVERYTHING[16],
        EVERYTHING[18],
        EVERYTHING[21],
    ]
    assert lines(site, "--user", "alice", "--bank", "B") == [
        EVERYTHING[15],
        EVERYTHING[16],
        EVERYTHING[18],
    ]
    assert lines(site, "--user", "bob") == [EVERYTHING[8], EVERYTHING[18]]
    assert lines(site, "--queue", "gold") == [EVERYTHING[5], EVERYTHING[12]]
    assert lines(site, "--project", "p1") == [EVERYTHING[6], EVERYTHING[19]]
    assert lines(site, "--config") == [CREATED, EVERYTHING[13], EVERYTHING[14]]


def test_since_and_until(site: Store) -> None:
    window = lines(site, "--since", str(T0 + 300), "--until", "2023-11-14T22:19:20+00:00")
    assert window == EVERYTHING[11:17]
    assert lines(site, "--bank", "A", "--since", str(T0 + 301)) == [EVERYTHING[-1]]
    assert lines(site, "--until", str(T0 + 99)) == EVERYTHING[:9]
    # A duration means that long before the ledger's now.
    assert lines(site, "--since", "3m", now=T0 + 600) == EVERYTHING[-3:]
    # An object with no event in the window: nothing, said on stderr.
    empty = site.run("history", "--queue", "gold", "--since", str(T0 + 400), now=T0 + 600)
    assert (empty.stdout, empty.stderr) == ("", "no events for queue gold\n")
    assert lines(site, "--since", str(T0 + 601)) == []


def test_json(site: Store) -> None:
    rows = json.loads(site.run("history", "--bank", "A", "--json", now=T0 + 600).stdout)
    assert [r["event"] for r in rows] == ["BankAdded", "BankEdited", "UsageCleared"]
    edited = rows[1]
    position = edited.pop("position")
    assert isinstance(position, int) and position > rows[0]["position"]
    assert edited == {
        "time": "2023-11-14T22:18:20+00:00",
        "timestamp": T0 + 300.0,
        # On PostgreSQL the actor is the session's role; --actor is who it acted for.
        "actor": "postgres" if site.kind == "postgres" else "ops",
        "reason": "grant #12",
        "event": "BankEdited",
        "action": "edit-bank",
        "kind": "bank",
        "name": "A",
        "changes": {"shares": [1, 10]},
        "source": {"on_behalf_of": "ops"} if site.kind == "postgres" else {},
    }
    removed = json.loads(site.run("history", "--user", "bob", "--json").stdout)[-1]
    assert removed["event"] == "BankRemoved"
    assert removed["details"] == {
        "associations": [["alice", "B"], ["bob", "B"]],
        "default_banks": {"alice": ["B", "A"]},
    }
    added = json.loads(site.run("history", "--user", "carol", "--json").stdout)[0]
    assert (added["kind"], added["name"], added["username"], added["bank"]) == (
        "association",
        "carol/A",
        "carol",
        "A",
    )
    assert added["changes"]["max_nodes"] == [None, 2147483647]
    assert added["changes"]["default_bank"] == [None, "A"]
    everything = json.loads(site.run("history", "--json").stdout)
    assert len(everything) == len(EVERYTHING)
    assert [r["position"] for r in everything] == sorted(r["position"] for r in everything)
    ingest = everything[9]
    assert (ingest["event"], ingest["kind"], ingest["details"]) == (
        "JobsRecorded",
        "jobs",
        {"jobs": 2, "batches": 1},
    )
    assert json.loads(site.run("history", "--since", str(T0 + 601), "--json").stdout) == []


def test_unknown_objects_and_bad_selectors(site: Store) -> None:
    for args, message in [
        (("--bank", "nope"), "bank nope not found in the ledger's history"),
        (("--user", "dave"), "user dave not found in the ledger's history"),
        (
            ("--user", "carol", "--bank", "B"),
            "user carol in bank B not found in the ledger's history",
        ),
        (("--queue", "silver"), "queue silver not found in the ledger's history"),
        (("--project", "p9"), "project p9 not found in the ledger's history"),
    ]:
        result = site.run("history", *args, expect=1)
        assert result.stderr == f"fairledger: {message}\n"
        assert result.stdout == ""
    for args in [
        ("--bank", "A", "--queue", "gold"),
        ("--user", "alice", "--project", "p1"),
        ("--config", "--all"),
        ("--queue", "gold", "--config"),
    ]:
        result = site.run("history", *args, expect=2)
        assert "cannot be combined" in result.stderr
    site.run("history", "--since", "yesterday", expect=2)


def test_deactivation_cascades_and_reactivations(ledger_store: Store) -> None:
    site = ledger_store
    for args in (
        ("add-bank", "root", "1"),
        ("add-bank", "C", "1", "--parent-bank", "root"),
        ("add-bank", "C1", "1", "--parent-bank", "C"),
        ("add-bank", "D", "1", "--parent-bank", "root"),
        ("add-user", "-u", "erin", "-B", "C1", "-i", "1005"),
        ("add-user", "-u", "erin", "-B", "D"),
    ):
        site.run(*args, *OPS)
    site.run("delete-bank", "C", *OPS, "--reason", "audit", now=T0 + 10)
    site.run("add-bank", "C", "2", "--parent-bank", "root", *OPS, now=T0 + 20)
    site.run("delete-user", "erin", "D", *OPS, now=T0 + 30)
    site.run("add-user", "-u", "erin", "-B", "D", "--shares", "5", *OPS, now=T0 + 40)
    deactivated = (
        "2023-11-14T22:13:30+00:00  ops  deactivate-bank C: active true → false; banks C1; "
        "users erin/C1; default_bank erin C1 → D  (audit)"
    )
    assert lines(site, "--bank", "C1") == [
        "2023-11-14T22:13:20+00:00  ops  add-bank C1: parent_bank C, shares 1, priority 0.0",
        deactivated,
    ]
    assert lines(site, "--bank", "C")[1:] == [
        deactivated,
        "2023-11-14T22:13:40+00:00  ops  reactivate-bank C: active false → true, shares 1 → 2",
    ]
    assert lines(site, "--user", "erin") == [
        "2023-11-14T22:13:20+00:00  ops  add-user erin/C1: userid 1005, shares 1, default_bank C1",
        "2023-11-14T22:13:20+00:00  ops  add-user erin/D: userid 1005, shares 1",
        deactivated,
        "2023-11-14T22:13:50+00:00  ops  deactivate-user erin/D: active true → false",
        "2023-11-14T22:14:00+00:00  ops  reactivate-user erin/D: active false → true, shares 1 → 5",
    ]
    assert lines(site, "--user", "erin", "--bank", "D") == lines(site, "--user", "erin")[1:]


def test_an_ingest_of_many_batches_is_one_entry_counting_them(
    ledger_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Batches of two jobs, read one event per page: the entry counts what it no longer holds.
    monkeypatch.setattr(ledger.store.application, "BATCH_SIZE", 2)
    monkeypatch.setattr(history_queries, "PAGE_SIZE", 1)
    s = ledger_store
    s.run("add-bank", "root", "1", now=T0 + 10)
    s.run("add-user", "--username", "u", "--userid", "7", "--bank", "root", now=T0 + 10)
    five = "".join(job_line(n, user="u", end=T0 + 15, seconds=5) + "\n" for n in range(1, 6))
    s.run("ingest", "-", input=five, now=T0 + 20)
    s.run("ingest", "-", input=job_line(6, user="u", end=T0 + 25, seconds=5) + "\n", now=T0 + 30)
    entries = json.loads(s.run("history", "--json", now=T0 + 40).stdout)
    ingests = [e["details"] for e in entries if e["kind"] == "jobs"]
    assert ingests == [{"jobs": 5, "batches": 3}, {"jobs": 1, "batches": 1}]
