"""The read models' projector, catch-up and rebuild: one projection reads the whole log in
order, so the site tables, jobs, usage and fair-share always reflect one log position, and a
rebuild folds exactly what the incremental updates folded. New events are projected inside the
transaction that appends them (see `project`), so the log never holds an event its read models
could not take; catch-up only serves a ledger written by an earlier release or just-dropped read
models. Positions move in the same transaction as the rows, under the writers' lock, so a
crash never leaves a half-applied page and two processes never apply an event twice."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from ledger import events as ev
from ledger import import_events as iev
from ledger.collector import paused
from ledger.errors import Unprojectable
from ledger.fairshare import Ranking
from ledger.joblog import JobLog
from ledger.neutralizations import Neutralizations, in_log
from ledger.reducers import Touched, fold
from ledger.site import SITE_ID, Site
from ledger.site_config import CONTINUOUS
from ledger.site_usage import AssociationUsage, AssocKey
from ledger.state import SiteState, copy_for_markers, copy_state
from ledger.store import log_tables
from ledger.store.application import Ledger, _first_line, unprojectable_errors
from ledger.store.connections import Connection
from ledger.usage_effects import moves_usage
from ledger.usage_effects import usage_scope as usage_scope_of
from projections.writers import (
    checkpoints,
    continuous_state,
    schema,
    totals_snapshots,
    tracking,
    usage_scope,
    usage_tables,
)
from projections.writers.site_tables import write_touched
from projections.writers.tracking import PROJECTION, READ_MODEL_KEY, SITE_VERSION

PAGE_SIZE = 500
# A fold's job batches go into `jobs` together, up to this many rows an insert: a rebuild folds
# hundreds of batches between two other events, and holds only these records meanwhile.
JOB_ROWS_PER_INSERT = 25_000
REBIN_KEYS = ("priority_decay_half_life",)


def all_tables() -> dict[str, str]:
    return {
        **schema.TABLES,
        **usage_tables.TABLES,
        **checkpoints.TABLES,
        **continuous_state.TABLES,
        **usage_scope.TABLES,
        **totals_snapshots.TABLES,
    }


# PostgreSQL: the tables whose rows every update rewrites (each association's and bank's usage
# and fair-share, its bins, the current period's totals, the tracking positions) keep half of
# each page free. A row's new version then fits beside the old one: a HOT update, which writes
# no index entry and whose dead versions are pruned in place, where a full page moves the row
# and leaves a dead one for autovacuum. Measured on the 1M-job bench ledger: the 10,000-row
# UPDATE of association_table in a Fair Tree update took 0.19-0.22 s at the default (a 10k-row
# table grown to 32 MB) and 0.04-0.075 s at 50. SQLite rewrites a row in place.
HOT_UPDATED_TABLES = (
    "association_table",
    "bank_table",
    "job_usage_bins",
    "period_totals",
    "projection_tracking",
)
HOT_UPDATE_FILLFACTOR = 50


# SQLite: the tables of many small rows keyed by their primary key alone are stored in that
# key's b-tree (WITHOUT ROWID), not in a rowid table beside an index of the key: one b-tree
# fewer to write. A Fair Tree update writes a checkpoint row per association (10,000 rows:
# 49-60 ms against 63-80 ms, and a quarter less space), and every ingest upserts the totals.
KEY_ORDERED_TABLES = (
    "fairshare_checkpoints",
    "period_totals",
    "period_totals_snapshots",
    "job_usage_bins",
    "continuous_sums",
)


def create_tables(conn: Connection) -> None:
    """In the open transaction, under the writers' lock (concurrent CREATE ... IF NOT EXISTS
    can still collide in PostgreSQL's catalog)."""
    postgres = conn.config.is_postgres
    storage = (
        [f"ALTER TABLE {t} SET (fillfactor = {HOT_UPDATE_FILLFACTOR})" for t in HOT_UPDATED_TABLES]
        if postgres
        else []
    )
    tables = [
        ddl if postgres or name not in KEY_ORDERED_TABLES else f"{ddl} WITHOUT ROWID"
        for name, ddl in all_tables().items()
    ]
    conn.run_statements(
        [
            *tables,
            *storage,
            *schema.INDEXES,
            *usage_tables.indexes(postgres),
            *usage_scope.INDEXES,
        ]
    )
    tracking.add_missing(
        conn,
        {
            **dict.fromkeys((*tracking.POSITIONS, tracking.JOBS_SINCE_TOTALS_SNAPSHOT), 0),
            READ_MODEL_KEY: schema.READ_MODEL_VERSION,
        },
    )


def drop_tables(conn: Connection) -> None:
    for name in all_tables():
        conn.execute(f"DROP TABLE IF EXISTS {name}")


_FOLDED: weakref.WeakKeyDictionary[Ledger, tuple[int, SiteState]] = weakref.WeakKeyDictionary()


def _folded_state(ledger: Ledger, version: int) -> SiteState:
    """The site state at `version`: the one this process folded last, if it is that one."""
    cached = _FOLDED.get(ledger)
    if cached is not None and cached[0] == version:
        return cached[1]
    return _site_state(ledger, version)


def _site_state(ledger: Ledger, version: int) -> SiteState:
    if version <= 0:
        return SiteState()
    site: Any = ledger.repository.get(SITE_ID, version=version)
    return site.state  # type: ignore[no-any-return]


def log_kind(event: Any) -> str:
    """What the log index calls an event: as-of looks up fair-share snapshots by kind, and an
    update asks whether anything but jobs changed the usage since the last: anyone's ("site"),
    some users' ("users", their names in usage_scope), or only what the fair-share makes of it
    ("policy"; ledger.usage_effects)."""
    if isinstance(event, ev.FairshareUpdated):
        return "fairshare"
    if isinstance(event, ev.UsageUpdated):
        return "usage"
    if isinstance(event, iev.UsageBalanceImported | ev.FairshareSet | ev.UsageCleared):
        return "balance"  # stored fair-share values in force until the next update-fshare
    if isinstance(event, JobLog.JobsRecorded | JobLog.Opened):
        return "jobs"
    if not moves_usage(event):
        return "policy"
    return "site" if usage_scope_of(event) is None else "users"


class _Folder:
    """Applies events in log order; site rows are written before anything that reads them."""

    def __init__(
        self,
        conn: Connection,
        state: SiteState,
        site_version: int,
        neutralized: Neutralizations | None = None,
    ) -> None:
        self.conn = conn
        self.neutralized = neutralized if neutralized is not None else Neutralizations()
        self.state = state
        self.site_version = site_version
        self.touched = Touched()
        self.log_rows: list[tuple[int, float, str, int]] = []
        # An update-usage whose columns are not written yet, (time, position): the next event
        # decides (see apply).
        self.pending_usage: tuple[float, int] | None = None
        # The checkpoint this fold wrote last: a rebuild need not read each one back.
        self.last_checkpoint: checkpoints.Written | None = None
        # The jobs folded since the last copy of the period totals (totals_snapshots): read at
        # this fold's first job batch, written back at its end.
        self.jobs_since_totals: int | None = None
        # Job batches folded whose period totals are not added yet, (first, last) position:
        # added before anything reads the totals (see apply), in one statement.
        self.pending_totals: tuple[int, int] | None = None
        # Job batches folded whose rows are not in `jobs` yet, (records, position), and how
        # many rows they hold: inserted in one go (usage_tables.insert_job_batches) before
        # anything reads the jobs, their totals first of all.
        self.pending_jobs: list[tuple[list[dict[str, Any]], int]] = []
        self.pending_job_rows = 0

    def finish(self) -> None:
        self._add_pending_totals()
        self._write_pending_usage()
        self.flush()
        if self.jobs_since_totals is not None:
            tracking.move(self.conn, tracking.JOBS_SINCE_TOTALS_SNAPSHOT, self.jobs_since_totals)

    def _insert_pending_jobs(self) -> None:
        if self.pending_jobs:
            usage_tables.insert_job_batches(self.conn, self.state, self.pending_jobs)
            self.pending_jobs = []
            self.pending_job_rows = 0

    def _add_pending_totals(self) -> None:
        self._insert_pending_jobs()  # the totals are summed from them
        if self.pending_totals is not None:
            usage_tables.add_totals(self.conn, *self.pending_totals)
            self.pending_totals = None

    def _count_jobs(self, jobs: int, position: int, at: float) -> None:
        """Copy the period totals once the spacing's jobs were folded since the last copy
        (totals_snapshots.spacing; only the periods model reads them)."""
        if self.jobs_since_totals is None:
            self.jobs_since_totals = tracking.position(
                self.conn, tracking.JOBS_SINCE_TOTALS_SNAPSHOT
            )
        self.jobs_since_totals += jobs
        # The spacing is never under SNAPSHOT_EVERY_JOBS: asked for only from there on.
        if (
            self.jobs_since_totals >= totals_snapshots.SNAPSHOT_EVERY_JOBS
            and self.jobs_since_totals >= totals_snapshots.spacing(self.conn)
        ):
            if self.state.usage_model != CONTINUOUS:
                # The copy reads the totals, and the job batches since the copy before in
                # log_index.
                self.flush()
                totals_snapshots.take(self.conn, self.state, position, at)
            self.jobs_since_totals = 0

    def _write_pending_usage(self) -> None:
        if self.pending_usage is not None:
            self.flush()
            at, position = self.pending_usage
            with self._bounded():
                usage_tables.store_usage(
                    self.conn,
                    usage_tables.plan_usage(
                        self.conn, self.state, at, False, position, self._settled(position, at)
                    ),
                )
            usage_tables.mark_usage_written(self.conn, position)
            self.pending_usage = None

    def _walk(self, mark: int, usage: dict[AssocKey, AssociationUsage]) -> Ranking | None:
        """The walk of the checkpoint at `mark` if it is the last one and ranked this very
        usage (usage_tables.plan_usage asks when no site event came since)."""
        last = self.last_checkpoint
        if last is None or last.position != mark or last.entries.keys() != usage.keys():
            return None
        if any(e.job_usage != usage[key].usage for key, e in last.entries.items()):
            return None
        return last.ranking()

    def _unchanged(
        self, since: int | None, last: checkpoints.Written, position: int, at: float
    ) -> bool:
        """Whether the update at `position` finds what the update-fshare that wrote the last
        checkpoint left: the usage columns are settled (`since`, that update or an
        update-usage after it), no job was recorded since the checkpoint, nothing else changed
        the usage (no site event, no opening balance, the same period) and nothing changed
        what the walk makes of it (no policy event: shares, an empty bank). Not under the
        continuous model, whose usage decays between any two moments."""
        return (
            since is not None
            and last.position <= since
            and self.state.usage_model != CONTINUOUS
            and not usage_tables.jobs_recorded_between(self.conn, last.position, position)
            and not usage_tables.policy_changed_between(self.conn, last.position, position)
            and (
                last.position == since
                or usage_tables.nothing_moved_usage(
                    self.conn, self.state, last.position, position, at
                )
            )
        )

    def _settled(self, position: int, at: float) -> int | None:
        """usage_tables.settled_position, unless this fold sets that update aside: then it
        wrote nothing."""
        since = usage_tables.settled_position(self.conn, self.state, position, at)
        return None if since is None or self.neutralized.skips(since) else since

    def flush(self) -> None:
        self._add_pending_totals()
        write_touched(self.conn, self.state, self.touched)
        self.touched = Touched()
        self.conn.executemany("INSERT INTO log_index VALUES (?, ?, ?, ?)", self.log_rows)
        self.log_rows = []

    def apply(self, event: Any, position: int) -> None:
        if not isinstance(event, JobLog.JobsRecorded):
            self._add_pending_totals()  # before this event reads them or changes the jobs
        if isinstance(event, ev.UsageUpdated | ev.FairshareUpdated):
            # The cron pair update-usage, update-fshare folded together (cron, a replay): the
            # second would recompute every column the first wrote, from the same state and
            # jobs, so the first's writes are skipped (and it is not the mark: USAGE_WRITTEN).
            self.pending_usage = None
        else:
            self._write_pending_usage()  # before this event changes the state or the jobs
        kind = log_kind(event)
        if isinstance(event, ev.SiteEvent | ev.LedgerCreated):
            self.site_version = event.originator_version
        self.log_rows.append((position, event.timestamp.timestamp(), kind, self.site_version))
        if self.neutralized.skips(position):
            return  # kept in the log and its time index, set aside everywhere else
        if kind == "users":
            scope = usage_scope_of(event)
            assert scope is not None  # log_kind's "users"
            usage_scope.write(self.conn, position, scope)
        if isinstance(event, JobLog.JobsRecorded):
            records = self.neutralized.kept(position, event.records)
            self.pending_jobs.append((records, position))
            self.pending_job_rows += len(records)
            if self.pending_job_rows >= JOB_ROWS_PER_INSERT:
                self._insert_pending_jobs()
            first = position if self.pending_totals is None else self.pending_totals[0]
            self.pending_totals = (first, position)
            self._count_jobs(len(records), position, event.timestamp.timestamp())
            return
        if isinstance(event, JobLog.Opened):
            return
        self.touched.update(fold(self.state, event))
        if isinstance(event, ev.ConfigChanged) and event.key in REBIN_KEYS:
            usage_tables.rebin(self.conn, self.state)
            totals_snapshots.drop_all(self.conn)
        elif isinstance(event, iev.UsageBalanceImported):
            self.flush()
            at = event.timestamp.timestamp()
            usage_tables.insert_balance(self.conn, self.state, event.entries, position)
            usage_tables.show_balance(self.conn, self.state, event.shown, at)
        elif isinstance(event, ev.FairshareSet):
            self.flush()  # the association's row first (add-user --fairshare: same command)
            usage_tables.show_fairshare(self.conn, event.username, event.bank, event.new)
        elif isinstance(event, ev.UsageCleared):
            self.flush()
            usage_tables.clear_association_values(self.conn, self.state, event.associations)
        elif isinstance(event, ev.UsageUpdated):
            self.pending_usage = (event.timestamp.timestamp(), position)
        elif isinstance(event, ev.FairshareUpdated):
            self.flush()
            at = event.timestamp.timestamp()
            if self.last_checkpoint is None:  # the first of this fold: read back once
                self.last_checkpoint = checkpoints.latest_before(self.conn, position)
            since = self._settled(position, at)
            last = self.last_checkpoint
            if last is not None and self._unchanged(since, last, position, at):
                # The walk would rank the same usage as the checkpoint's did: every column
                # and entry stays as it is (an idle cron cycle).
                self.last_checkpoint = checkpoints.repeat(self.conn, last, position)
                usage_tables.mark_usage_written(self.conn, position)
                return
            with self._bounded():
                self._update_fairshare(at, position, since, last)

    def _bounded(self) -> AbstractContextManager[None]:
        """Around an update under the periods model, whose work is a row per association (no
        collection inside it, collector.paused); under the continuous model one may read every
        job."""
        return paused() if self.state.usage_model != CONTINUOUS else nullcontext()

    def _update_fairshare(
        self, at: float, position: int, since: int | None, last: checkpoints.Written | None
    ) -> None:
        """The columns and the checkpoint of the update-fshare at `position`, after `last`."""
        planned = usage_tables.plan_usage(
            self.conn, self.state, at, True, position, since, self._walk
        )
        # A checkpoint written whole after a walk that ranked everyone takes nothing from the
        # last one: its entries are read back only if that is not known from the columns.
        if last is not None and checkpoints.whole_without_previous(
            self.state, planned.ranking, last, len(planned.associations), since
        ):
            last = None
        # The columns' UPDATEs (10,000 rows on a large site) run on the server while the
        # checkpoint is worked out here, from the last one read back before they go out.
        if last is not None:
            last.read_back()
        with self.conn.overlap():
            usage_tables.store_usage(self.conn, planned)
            usage_tables.mark_usage_written(self.conn, position)
            checkpoint = checkpoints.plan(
                self.state, position, planned.usage, planned.ranking, last
            )
        self.last_checkpoint = checkpoints.store(self.conn, checkpoint)


def scratch_folder(conn: Connection, neutralized: Neutralizations) -> _Folder:
    """A fold from the empty state into the read models just created in `conn` (the doctor
    applies the log event by event with it)."""
    return _Folder(conn, SiteState(), 0, neutralized)


def _fold(ledger: Ledger, conn: Connection, appended: list[tuple[int, Any]]) -> Callable[[], None]:
    """In the open transaction: apply the committed events the read models have not seen,
    then `appended` (this transaction's own, not yet visible to the event store's reader),
    and move the positions. Returns what to keep once the transaction has committed."""
    position = tracking.position(conn, PROJECTION, lock=True)
    committed = appended[0][0] - 1 if appended else ledger.recorder.max_notification_id() or 0
    site_version = tracking.position(conn, SITE_VERSION)
    # Only an event not folded yet can be neutralized (projections.doctor), and its
    # neutralization comes after it: those of the committed range, then this transaction's.
    neutralized = in_log(ledger, position, committed) if position < committed else Neutralizations()
    neutralized.honour(event for _, event in appended)
    folder = _Folder(conn, _folded_state(ledger, site_version), site_version, neutralized)
    # The period totals an earlier fold of this transaction left to add: added with this
    # fold's, before anything here reads them (_Folder.apply).
    deferred = ledger.before_commit.pop(_TOTALS, None) if ledger.before_commit else None
    if isinstance(deferred, _DeferredTotals):
        folder.pending_totals = (deferred.first, deferred.last)
    jobs_only = position >= committed and all(
        isinstance(e, JobLog.JobsRecorded) for _, e in appended
    )
    if jobs_only:
        # Job batches leave the site as it was: its state is cached at once, for the next
        # fold of the same transaction (ingest records a file's pieces in one).
        _FOLDED[ledger] = (site_version, folder.state)
    else:
        _FOLDED.pop(ledger, None)  # folding mutates it: cached again only once committed
    start = position
    while start < committed and (
        page := ledger.recorder.select_notifications(
            start=start, limit=PAGE_SIZE, stop=committed, inclusive_of_start=False
        )
    ):
        for notification in page:
            folder.apply(ledger.mapper.to_domain_event(notification), notification.id)
        start = page[-1].id
    for at, event in appended:
        folder.apply(event, at)
    if jobs_only and folder.pending_totals is not None and ledger.before_commit is not None:
        # Job batches alone: their totals are added before the commit, with those of the
        # transaction's later chunks. One statement over an ingest's 200,000 jobs upserts each
        # (identity, period) once, where one per chunk of 5,000 upserted it up to 40 times
        # (timed in process: PostgreSQL 1.36 -> 0.32 s, SQLite 0.76-0.78 -> 0.51-0.58 s).
        ledger.before_commit[_TOTALS] = _DeferredTotals(*folder.pending_totals)
        folder.pending_totals = None
    folder.finish()
    head = appended[-1][0] if appended else committed
    tracking.move(conn, PROJECTION, head)
    tracking.move(conn, SITE_VERSION, folder.site_version)

    def keep() -> None:
        # For this process's next fold (an ingest folds once per chunk): loading a
        # 10k-association site from its snapshot costs more than the chunk's jobs.
        _FOLDED[ledger] = (folder.site_version, folder.state)

    return keep


_TOTALS = "period_totals"  # the projector's entry in Ledger.before_commit


@dataclass(frozen=True)
class _DeferredTotals:
    """The period totals of the job batches at log positions first..last, left to add before
    the transaction commits."""

    first: int
    last: int

    def __call__(self, conn: Connection) -> None:
        usage_tables.add_totals(conn, self.first, self.last)


def project(
    ledger: Ledger, conn: Connection, appended: list[tuple[int, Any]]
) -> Callable[[], None]:
    """The ledger's projector: called inside its append transaction (ledger.store.application),
    so an event the read models cannot hold makes the whole append fail and nothing is recorded."""
    return _fold(ledger, conn, appended)


def attach(ledger: Ledger) -> None:
    """Make `ledger` project what it appends, in the same transaction."""
    ledger.projector = lambda conn, appended: project(ledger, conn, appended)
    ledger.before_command = lambda site, markers_only: _remember(ledger, site, markers_only)


def _remember(ledger: Ledger, site: Site, markers_only: bool = False) -> None:
    """The state a command starts from is the one its events are folded onto, when the read
    models are current: a copy taken before the command changes it spares the projector
    loading the Site again (0.04-0.15 s at 10,000 associations by snapshot form, on every write
    of a new process). A command that records markers alone (a cron cycle's updates) changes
    none of the state's tables: they are shared, not copied (copy_for_markers). The Site is
    the command's own, loaded for it and dropped after it, so nothing changes them later."""
    cached = _FOLDED.get(ledger)
    if cached is None or cached[0] != site.version:
        copy = copy_for_markers if markers_only else copy_state
        _FOLDED[ledger] = (site.version, copy(site.state))


def catch_up(ledger: Ledger, conn: Connection) -> int:
    """Apply every committed event after the read models' position (a ledger written by an
    earlier release, or read models just rebuilt); returns how many were applied."""
    behind = (ledger.recorder.max_notification_id() or 0) - tracking.position(conn, PROJECTION)
    if behind <= 0:
        return 0  # caught up: reads take no lock and need no write privilege
    with _poison_named(), log_tables.locked(conn):
        keep = _fold(ledger, conn, [])
    keep()
    return behind


@contextmanager
def _poison_named() -> Iterator[None]:
    """A committed event the read models cannot apply (written by an earlier release): one
    line that names the cure."""
    try:
        yield
    except unprojectable_errors() as err:
        raise Unprojectable(
            f"the log holds an event its read models cannot hold ({_first_line(err)}): "
            "run 'fairledger doctor'"
        ) from None


def index_steps(postgres: bool) -> dict[int, list[str]]:
    """The layouts a ledger leaves for the next one by statements alone, without a rebuild,
    keyed by the layout left: those steps only add or replace indexes, which the store builds
    from the rows as they are (seconds at most, where a rebuild refolds every event)."""
    return {19: usage_tables.totals_index_step(postgres)}


def _step_indexes(conn: Connection, version: int) -> bool:
    """Take the read models from layout `version` to this release's by index steps alone, if
    every step between is one: whether they now have this release's layout."""
    steps = index_steps(conn.config.is_postgres)
    between = range(version, schema.READ_MODEL_VERSION)
    if not between or any(v not in steps for v in between):
        return False
    with log_tables.locked(conn):
        found = tracking.position(conn, READ_MODEL_KEY)  # another command may have stepped
        if found == version:
            conn.run_statements([statement for v in between for statement in steps[v]])
            tracking.move(conn, READ_MODEL_KEY, schema.READ_MODEL_VERSION)
            found = schema.READ_MODEL_VERSION
    return found == schema.READ_MODEL_VERSION


def prepare(conn: Connection, ledger: Ledger) -> bool:
    """Create the read models if missing, and rebuild them when their layout changed (but for
    a change of indexes only: index_steps): whether it rebuilt them."""
    try:
        version = tracking.position(conn, READ_MODEL_KEY)
    except Exception:  # no tracking table yet (either store's "no such table" error)
        with log_tables.locked(conn):
            create_tables(conn)
        version = tracking.position(conn, READ_MODEL_KEY)
    if version == schema.READ_MODEL_VERSION or _step_indexes(conn, version):
        return False
    try:
        rebuild(ledger, conn)
        return True
    except Unprojectable:
        # A log an earlier release poisoned cannot be refolded until the doctor sets its
        # events aside, and the doctor must still open it: lay the new tables out empty
        # (nothing folded, so a read or write still names the cure) for its append to fold.
        with log_tables.locked(conn):
            drop_tables(conn)
            create_tables(conn)
            _FOLDED.pop(ledger, None)
        return False  # nothing folded: a rebuild asked for still names the cure


def rebuild(ledger: Ledger, conn: Connection) -> None:
    """Drop and refold every read model in one transaction under the writers' lock: readers
    see the old tables until it commits, and no writer projects into half-built ones. Then
    PostgreSQL's planner statistics for them: new tables have none until autovacuum analyzes
    them, and meanwhile a cycle's reads of a million jobs were planned as scans (on the bench
    ledger, the carried usage's query for jobs still running took 0.15 s, and 0.01 s after)."""
    with _poison_named(), log_tables.locked(conn):
        drop_tables(conn)
        create_tables(conn)
        _FOLDED.pop(ledger, None)
        keep = _fold(ledger, conn, [])
    keep()
    conn.analyze(list(all_tables()))


def tracked_position(conn: Connection) -> int:
    """The log position the read models reflect."""
    return tracking.position(conn, PROJECTION)


def fold_into(ledger: Ledger, conn: Connection) -> None:
    """Fold the whole log into the read models of an empty database (verify's rebuild)."""
    with conn.transaction():
        create_tables(conn)
        _fold(ledger, conn, [])
