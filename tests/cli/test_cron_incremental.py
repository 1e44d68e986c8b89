"""The incremental usage update: a cron cycle recomputes only the associations whose users
have jobs recorded since the last update, and keeps every other's stored usage, unless a period
boundary was crossed or a site event that can move usage came between (projections.writers
.usage_tables.settled_position). Its numbers must be those a whole recomputation gives: each
ledger here is run beside a twin that records a harmless site event (a config key of the
site's own) before every update, which makes the twin recompute everything, and the two must
show the same usage, fair-share, bins and past trees. The final numbers are checked by hand
too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.store.connections import Connection, parse_store_url
from ledger.usecases.session import Session
from projections.writers import checkpoints, runner, usage_tables
from tests.cli.test_cron import CREATED, _site, twin  # noqa: F401 (a fixture)
from tests.cli.test_ingest import all_tables, job, write
from tests.conftest import T0, Store

WEEK = 604800.0  # the default half-life: one period


def period(k: int) -> float:
    """The start of the ledger's k-th period (its epoch is its creation)."""
    return CREATED + k * WEEK


def _bins(store: Store) -> list[dict[str, Any]]:
    conn = Connection(parse_store_url(store.url))
    try:
        rows = conn.query("SELECT username, bank, bins FROM job_usage_bins")
    finally:
        conn.close()
    return sorted(rows, key=lambda r: (r["username"], r["bank"]))


def _shown(store: Store, now: float) -> dict[str, Any]:
    """What the usage update shows (export-json would too, but it lists the twin's config)."""
    return {
        "users": store.run("list-users", "--json", now=now).stdout,
        "tree": store.run("view-bank", "root", "-t", now=now).stdout,
        "bins": _bins(store),
    }


class Pair:
    """The ledger under test and its twin that recomputes everything at every update."""

    def __init__(self, fast: Store, full: Store, tmp_path: Path) -> None:
        self.fast, self.full, self.tmp_path = fast, full, tmp_path
        self.files = 0
        self.forced = 0

    def _forced(self, now: float) -> None:
        self.forced += 1
        self.full.run("add-config", f"twin{self.forced}=x", now=now)

    def ingest(self, now: float, *jobs: dict[str, Any]) -> None:
        self.files += 1
        path = write(self.tmp_path / f"jobs{self.files}.jsonl", *jobs)
        for store in (self.fast, self.full):
            store.run("ingest", path, now=now)

    def cron(self, now: float) -> None:
        self._forced(now)
        for store in (self.fast, self.full):
            store.run("cron", now=now)
        assert _shown(self.fast, now) == _shown(self.full, now)

    def run(self, now: float, *args: str) -> None:
        """A command run on both (an update alone, a clear-usage)."""
        if args[0].startswith("update-"):
            self._forced(now)
        for store in (self.fast, self.full):
            store.run(*args, now=now)
        assert _shown(self.fast, now) == _shown(self.full, now)


def _settled(store: Store, at: float) -> int | None:
    """What settled_position says of an update at the head of the log at time `at`."""
    s = Session(store.url, None)
    try:
        state = s.ledger.state()
        position = runner.tracked_position(s.conn) + 1
        return usage_tables.settled_position(s.conn, state, position, at)
    finally:
        s.close()


def store_calls(monkeypatch: Any, module: Any, name: str) -> list[str]:
    """The store (URL) of every call of `module.name`, a function whose first argument is the
    connection, from now on: which ledger recomputed what."""
    calls: list[str] = []
    real = getattr(module, name)

    def counted(conn: Connection, *args: Any, **kwargs: Any) -> Any:
        calls.append(conn.config.describe())
        return real(conn, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def same_past(store: Store, other: Store, moments: tuple[float, ...], now: float) -> None:
    """Both ledgers show the same tree as of each moment (asked at `now`)."""
    for asked in moments:
        args = ("view-bank", "root", "-t", "--as-of", f"{asked:.3f}")
        assert store.run(*args, now=now).stdout == other.run(*args, now=now).stdout


def rebuilt_alike(store: Store, now: float) -> None:
    """A rebuild folds the same log into the same tables (the incremental paths included)."""
    before = all_tables(store)
    store.run("rebuild", now=now)
    assert all_tables(store) == before


def test_cron_cycles_give_what_a_whole_recomputation_gives(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    _site(store)
    _site(twin)
    pair = Pair(store, twin, tmp_path)
    now = period(2) + 3600
    # alice (userid 5001) in physics, her default bank: 100 s in period 2, 60 s in period 1.
    pair.ingest(
        now, job(1, end=period(2) + 600, duration=100), job(2, end=period(1) + 100, duration=60)
    )
    pair.cron(now)

    # Only jobs since: bob's, and late jobs into earlier periods (alice's in chemistry, and one
    # naming her userid alone, so her default bank).
    now += 3600
    assert _settled(store, now) is not None  # the next cycle takes the incremental path
    pair.ingest(
        now,
        job(3, end=period(2) + 2000, duration=40, userid=5002),
        job(4, end=period(0) + 50, duration=30, bank="chemistry"),
        job(5, end=period(1) + 500, duration=20),
    )
    pair.cron(now)
    pair.cron(now + 60)  # no new job

    # A period boundary crossed: every association's bins move.
    now = period(3) + 100
    assert _settled(store, now) is None
    pair.ingest(now, job(6, end=period(3) + 50, duration=10))
    pair.cron(now)

    # clear-usage (a site event: the next cycle recomputes all), then a cycle whose late job
    # ends before the cutoff and must stay out of the incremental sum.
    cutoff = now + 60
    pair.run(cutoff, "clear-usage", "chemistry")
    assert _settled(store, cutoff + 60) is None
    pair.ingest(
        cutoff + 60,
        job(7, end=period(3) + 10, duration=70, userid=5002),
        job(8, end=cutoff + 30, duration=5, userid=5002),
    )
    pair.cron(cutoff + 60)
    now = cutoff + 120
    pair.ingest(
        now,
        job(9, end=cutoff - 10, duration=8, userid=5002),
        job(10, end=now - 30, duration=3, userid=5002),
    )
    pair.cron(now)

    # The separate commands: update-usage, more jobs, update-fshare.
    pair.ingest(now + 60, job(11, end=now + 30, duration=7))
    pair.run(now + 60, "update-usage")
    pair.ingest(now + 120, job(12, end=now + 70, duration=4))
    pair.run(now + 120, "update-fshare")
    # ... and update-fshare right after update-usage: the walk the last checkpoint kept ranked
    # older usage (chemistry below physics), so it must not stand.
    pair.ingest(now + 140, job(13, end=now + 130, duration=200, userid=5002))
    pair.run(now + 140, "update-usage")
    pair.run(now + 150, "update-fshare")

    # By hand, at period 3 (decay 0.5 a period): alice in physics 10 + 7 + 4 this period, 100
    # in period 2, 60 + 20 in period 1: 21 + 50 + 20. Her chemistry job and bob's jobs up to
    # the cutoff are cleared; bob keeps 5 + 3 + 200.
    users = json.loads(store.run("list-users", "--json", now=now + 150).stdout)
    usage = {(r["username"], r["bank"]): r["job_usage"] for r in users}
    assert usage == {
        ("alice", "physics"): 91.0,
        ("alice", "chemistry"): 0.0,
        ("bob", "chemistry"): 208.0,
    }

    # The past, asked of both: the same trees; and a rebuild.
    same_past(store, twin, (period(2) + 7230, period(3) + 130, now + 90), now + 150)
    rebuilt_alike(store, now + 150)


def test_more_users_than_one_query_names_give_the_same_usage(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    """With more users with new jobs than one query names (USERS_PER_QUERY, made 1 here),
    the incremental path reads the changed periods' totals in one scan and keeps their users'
    rows itself: a job that names its user, and one that gives only a userid, both count."""
    monkeypatch.setattr(usage_tables, "USERS_PER_QUERY", 1)
    scans = store_calls(monkeypatch, usage_tables, "_changed_periods_totals")
    _site(store)
    _site(twin)
    pair = Pair(store, twin, tmp_path)
    now = period(2) + 3600
    pair.ingest(now, job(1, end=period(2) + 600, duration=100))
    pair.cron(now)
    now += 3600
    pair.ingest(
        now,
        job(2, end=period(2) + 2000, duration=40, userid=5002),
        job(3, end=period(1) + 500, duration=20, user="alice", bank="chemistry"),
        job(4, end=period(2) + 2500, duration=30, userid=None, user="alice"),
    )
    assert _settled(store, now) is not None  # the incremental path
    pair.cron(now)
    assert scans == [parse_store_url(store.url).describe()]  # the fast one, in one scan
    users = json.loads(store.run("list-users", "--json", now=now).stdout)
    usage = {(r["username"], r["bank"]): r["job_usage"] for r in users}
    # Decay 0.5 a period, at period 2: alice in physics 100 + 30, in chemistry 20 / 2; bob 40.
    assert usage == {
        ("alice", "physics"): 130.0,
        ("alice", "chemistry"): 10.0,
        ("bob", "chemistry"): 40.0,
    }


def test_only_jobs_since_the_last_update_leave_the_mark_standing(
    ledger_store: Store, tmp_path: Path
) -> None:
    """settled_position: the last update certainly written, unless a site event came since."""
    ledger_store.run("add-bank", "root", "1", now=T0)
    ledger_store.run("add-user", "-u", "alice", "-i", "5001", "-B", "root", now=T0)
    ledger_store.run("cron", now=T0 + 60)
    fairshare_at = ledger_store.log_position()
    path = write(tmp_path / "a.jsonl", job(1, end=T0 + 90))
    ledger_store.run("ingest", path, now=T0 + 120)
    assert _settled(ledger_store, T0 + 180) == fairshare_at
    # An update-usage run on its own wrote its columns: the next update starts from it (a
    # replay that folds it into an update right after it starts from the one before).
    ledger_store.run("update-usage", now=T0 + 180)
    usage_at = ledger_store.log_position()
    assert _settled(ledger_store, T0 + 240) == usage_at
    ledger_store.run("ingest", write(tmp_path / "b.jsonl", job(2, end=T0 + 200)), now=T0 + 240)
    assert _settled(ledger_store, T0 + 240) == usage_at
    # A change that moves no usage leaves the mark standing (ledger.usage_effects), and so
    # does one that moves only its users' (a new association: they are recomputed whole);
    # one that can move anyone's (a config key of the site's own) does not.
    ledger_store.run("add-project", "climate", now=T0 + 240)
    ledger_store.run("edit-user", "alice", "--shares", "3", now=T0 + 240)
    ledger_store.run("add-bank", "physics", "1", "--parent-bank", "root", now=T0 + 240)
    ledger_store.run("add-user", "-u", "bob", "-i", "5002", "-B", "physics", now=T0 + 240)
    assert _settled(ledger_store, T0 + 300) == usage_at
    ledger_store.run("add-config", "note=x", now=T0 + 300)
    assert _settled(ledger_store, T0 + 300) is None


def _checkpoint_rows(store: Store) -> dict[int, int]:
    """Rows stored per checkpoint (position -> rows), every checkpoint listed."""
    conn = Connection(parse_store_url(store.url))
    try:
        marks = [int(p) for (p,) in conn.rows("SELECT position FROM fairshare_checkpoint_marks")]
        counts = dict(
            conn.rows("SELECT position, COUNT(*) FROM fairshare_checkpoints GROUP BY position")
        )
    finally:
        conn.close()
    return {p: int(counts.get(p, 0)) for p in sorted(marks)}


def _history(store: Store, user: str, now: float) -> list[tuple[Any, ...]]:
    """report fairshare-history without its log positions (the twin's are further on)."""
    found = json.loads(
        store.run("report", "fairshare-history", "--user", user, "--json", now=now).stdout
    )
    return [(r["time"], r["job_usage"], r["fairshare"], r["rank"], r["of"]) for r in found]


def _updated_pair(store: Store, other: Store, tmp_path: Path) -> tuple[Pair, float]:
    """Both sites, a job of alice and one of bob, and a cron cycle: the pair and its time."""
    _site(store)
    _site(other)
    pair = Pair(store, other, tmp_path)
    now = period(2) + 3600
    pair.ingest(now, job(1, end=period(2) + 600, duration=100), job(2, end=now - 60, userid=5002))
    pair.cron(now)
    return pair, now


def test_an_idle_cycle_keeps_the_last_update_without_recomputing_it(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    """An update that finds no job and no change since the last update-fshare writes no
    column and no checkpoint row, only the checkpoint's mark: and every answer, now and as of
    then, is the one a whole recomputation (the twin's) gives."""
    pair, now = _updated_pair(store, twin, tmp_path)

    recomputed = store_calls(monkeypatch, usage_tables, "plan_usage")
    before = _checkpoint_rows(store)
    pair.cron(now + 60)  # nothing new: the twin recomputes (its config key), this one keeps
    assert recomputed == [parse_store_url(twin.url).describe()]
    after = _checkpoint_rows(store)
    idle = max(after)
    assert after == {**before, idle: 0}  # a mark over the rows of the checkpoint before

    # The separate command idle too, then a cycle with a job: recomputed again.
    pair.run(now + 120, "update-fshare")
    assert len(recomputed) == 2
    pair.ingest(now + 180, job(3, end=now + 150, duration=30))
    pair.cron(now + 180)
    assert len(recomputed) == 4

    for user in ("alice", "bob"):
        assert _history(store, user, now + 180) == _history(twin, user, now + 180)
    same_past(store, twin, (now + 60, now + 120), now + 180)
    rebuilt_alike(store, now + 180)  # one pass, its checkpoints in memory


def test_an_update_fshare_after_an_update_usage_starts_from_it(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    """flux-accounting's cron pair as two commands: the update-fshare after an update-usage
    recomputes no user's usage (the update-usage wrote it), an idle pair stores no checkpoint
    row, and every answer, now and as of then, is a whole recomputation's (the twin's)."""
    pair, now = _updated_pair(store, twin, tmp_path)
    pair.ingest(now + 60, job(3, end=now + 30, duration=40))

    fast = parse_store_url(store.url).describe()
    recomputed = store_calls(monkeypatch, usage_tables, "_users_usage")
    pair.run(now + 60, "update-usage")
    assert recomputed.count(fast) == 1  # alice, the new job's user
    pair.run(now + 60, "update-fshare")
    assert recomputed.count(fast) == 1  # the update-usage's columns hold her job

    before = _checkpoint_rows(store)
    written = store_calls(monkeypatch, usage_tables, "plan_usage")
    pair.run(now + 120, "update-usage")
    pair.run(now + 120, "update-fshare")
    assert recomputed.count(fast) == 1
    # The idle pair: the update-fshare neither writes usage nor walks, and stores only the
    # checkpoint's mark.
    assert written.count(fast) == 1
    after = _checkpoint_rows(store)
    assert after == {**before, max(after): 0}

    for user in ("alice", "bob"):
        assert _history(store, user, now + 180) == _history(twin, user, now + 180)
    same_past(store, twin, (now + 60, now + 120), now + 180)
    rebuilt_alike(store, now + 180)  # the replay folds each pair into its update-fshare


def test_new_shares_keep_the_usage_and_walk_again(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    """A change that moves no usage (shares, a queue, a project: ledger.usage_effects) leaves
    the stored usage standing, so the next cycle recomputes none of it; but the walk is done
    again, under the new shares, even with no new job (not the idle cycle's shortcut)."""
    _site(store)
    _site(twin)
    pair = Pair(store, twin, tmp_path)
    now = period(2) + 3600
    # physics (alice) 100 s, chemistry (bob) 60 s: at 1:1 shares chemistry's weight is higher.
    pair.ingest(
        now,
        job(1, end=now - 600, duration=100),
        job(2, end=now - 60, duration=60, userid=5002),
    )
    pair.cron(now)
    ranked_before = listed(store, now, "fairshare")
    assert ranked_before[("bob", "chemistry")] > ranked_before[("alice", "physics")]

    whole = store_calls(monkeypatch, usage_tables, "usage_at")
    for ledger in (store, twin):
        ledger.run("edit-bank", "physics", "--shares", "5", now=now + 30)
        ledger.run("add-queue", "debug", now=now + 30)
        ledger.run("add-project", "fusion", now=now + 30)
    pair.cron(now + 60)  # the twin, forced, recomputes all; this one none
    assert whole == [parse_store_url(twin.url).describe()]
    # 5:1 shares: physics' weight (5/6)/(100/160) now beats chemistry's (1/6)/(60/160).
    ranked_after = listed(store, now + 60, "fairshare")
    assert ranked_after[("alice", "physics")] > ranked_after[("bob", "chemistry")]

    # And a new job after it: only its user's usage is recomputed, the walk done again.
    pair.ingest(now + 120, job(3, end=now + 90, duration=30))
    pair.cron(now + 120)
    assert len(whole) == 2
    same_past(store, twin, (now + 60,), now + 120)
    rebuilt_alike(store, now + 120)


def listed(store: Store, now: float, column: str) -> dict[tuple[str, str], float]:
    """`column` of every association, as list-users --json shows it."""
    users = json.loads(store.run("list-users", "--json", now=now).stdout)
    return {(r["username"], r["bank"]): r[column] for r in users}


def test_a_new_association_or_default_bank_recomputes_its_users_alone(
    store: Store,
    twin: Store,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: Any,
) -> None:
    """A new association and a new default bank move only some users' usage (jobs recorded
    before carol existed are hers now; dave takes bob's userid, so a job naming only that
    userid names no one alone; alice's jobs without a bank follow her default bank): the next
    cycle recomputes those users from all their jobs and carries everyone else, with the
    numbers the twin's whole recomputation gives."""
    _site(store)
    _site(twin)
    pair = Pair(store, twin, tmp_path)
    now = period(2) + 3600
    pair.ingest(
        now,
        job(1, end=period(2) + 600, duration=100),  # alice by userid, her default bank
        job(2, end=period(1) + 100, duration=60),  # alice, an earlier period
        job(3, end=period(2) + 700, duration=40, userid=5002),  # bob by userid alone
        job(4, end=period(2) + 800, duration=25, user="carol", userid=5003),  # no carol yet
        job(5, end=period(2) + 900, duration=30, userid=5002, user="bob", bank="chemistry"),
    )
    pair.cron(now)
    usage = listed(store, now, "job_usage")
    assert (usage[("alice", "physics")], usage[("bob", "chemistry")]) == (130.0, 70.0)

    whole = store_calls(monkeypatch, usage_tables, "usage_at")
    for ledger in (store, twin):
        ledger.run("add-user", "-u", "carol", "-i", "5003", "-B", "physics", now=now + 30)
        ledger.run("add-user", "-u", "dave", "-i", "5002", "-B", "physics", now=now + 30)
        ledger.run("edit-user", "alice", "--default-bank", "chemistry", now=now + 30)
    assert _settled(store, now + 60) is not None  # no whole recomputation due
    pair.cron(now + 60)
    assert whole == [parse_store_url(twin.url).describe()]
    # By hand (decay 0.5 a period): carol's job is hers; bob keeps only the job naming him;
    # alice's jobs without a bank are chemistry's now.
    usage = listed(store, now + 60, "job_usage")
    assert usage[("carol", "physics")] == 25.0
    assert usage[("bob", "chemistry")] == 30.0
    assert (usage[("alice", "physics")], usage[("alice", "chemistry")]) == (0.0, 130.0)

    pair.ingest(now + 120, job(6, end=now + 90, duration=8, user="carol"))
    pair.cron(now + 120)
    assert len(whole) == 2
    same_past(store, twin, (now + 10, now + 90), now + 120)
    rebuilt_alike(store, now + 120)


def test_a_failure_while_the_columns_are_written_records_nothing(
    store: Store, tmp_path: Path, monkeypatch: Any
) -> None:
    """The update's column writes go to the server while the checkpoint is worked out (on
    PostgreSQL); a failure then records nothing, leaves every table as it was, and the next
    cycle runs."""
    _site(store)
    now = period(2) + 3600
    store.run("ingest", write(tmp_path / "jobs.jsonl", job(1, end=now - 600, duration=100)))
    before, position = all_tables(store), store.log_position()

    def unplannable(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the checkpoint could not be worked out")

    monkeypatch.setattr(checkpoints, "plan", unplannable)
    failed = store.run("cron", now=now, expect=None)
    assert failed.exit_code != 0
    assert isinstance(failed.exception, OSError) or "could not be worked out" in failed.stderr
    assert (all_tables(store), store.log_position()) == (before, position)
    monkeypatch.undo()
    store.run("cron", now=now)
    assert store.log_position() > position  # (PostgreSQL's sequence skips the rolled-back two)
    assert all_tables(store)["fairshare_checkpoints"] != before["fairshare_checkpoints"]
