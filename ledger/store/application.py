"""The Ledger application: one eventsourcing Application, one ordered log for every change.

A write is one transaction under the writers' lock (ledger.store.log_tables): load the Site
aggregate (from its newest snapshot) as committed, take the time, let the command validate and
trigger events, insert them, link them into the hash chain, and hand them to the projector, which
brings the read models up to them on the same connection. Only then does it commit: an event
whose projection fails is never recorded, log order is time order, and no writer loses
another's update. Time comes from one clock that never runs backwards.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, Repository
from eventsourcing.persistence import IntegrityError, JSONTranscoder, StoredEvent, Transcoding
from eventsourcing.utils import Environment, get_topic

from ledger import events as ev
from ledger import neutralizations
from ledger.chain import record_digest
from ledger.clock import iso, real_now, to_datetime
from ledger.errors import (
    AlreadyExists,
    ClockWentBackwards,
    ConcurrentUpdate,
    LedgerMissing,
    Unprojectable,
    WriteFailed,
)
from ledger.joblog import BATCH_SIZE, JOBLOG_ID, JobLog, job_key
from ledger.site import SITE_ID, Site, Stamp, default_config
from ledger.site_config import WEIGHTED_WALK
from ledger.state import (
    SiteState,
    state_from_columns,
    state_from_dict,
    state_to_columns,
    state_to_dict,
)
from ledger.store import append_only, log_tables, roles
from ledger.store.connections import (
    Connection,
    SharedConnectionPool,
    SharedSQLitePool,
    StoreConfig,
    bound_connection_waits,
    defer_type_adapters,
    ensure_schema,
    event_table_exists,
    registered_before_writes,
)
from ledger.store.site_repository import SiteRepository
from ledger.store.transcoder import LedgerTranscoder, exact_loads

T = TypeVar("T")
# What a value the read models cannot store raises while it is folded into SQLite: an integer
# too wide for a column, a non-finite number.
UNPROJECTABLE: tuple[type[BaseException], ...] = (OverflowError, ValueError, sqlite3.IntegrityError)


def unprojectable_errors() -> tuple[type[BaseException], ...]:
    """UNPROJECTABLE, and PostgreSQL's DataError (out of range, a NUL in a text) once psycopg is
    in use: it is imported only for a PostgreSQL store, which keeps a SQLite command's start-up
    free of it."""
    psycopg = sys.modules.get("psycopg")
    return UNPROJECTABLE + ((psycopg.errors.DataError,) if psycopg is not None else ())


MAX_ATTEMPTS = 8
BACKOFF_SECONDS = 0.05  # the first retry waits up to this; each later one up to twice as long
# Called inside the append transaction with the appended (position, event) pairs; returns what
# to run once it has committed.
Projector = Callable[[Connection, list[tuple[int, Any]]], Callable[[], None]]
SNAPSHOT_INTERVAL = 200


class SiteStateAsDict(Transcoding):
    """The first snapshot form (a nested object); still read, no longer written."""

    type = SiteState
    name = "site_state"

    def encode(self, obj: SiteState) -> dict[str, Any]:
        return state_to_dict(obj)

    def decode(self, data: dict[str, Any]) -> SiteState:
        return state_from_dict(data)


class SiteStateAsText(Transcoding):
    """The second snapshot form (the state as one JSON text); still read, no longer written.
    The library's transcoder calls a Python hook per decoded object, which made the first
    form of a 10k-association snapshot take ~0.4 s to load; one string is decoded by the C
    parser instead."""

    type = SiteState
    name = "site_state_json"

    def encode(self, obj: SiteState) -> str:
        return json.dumps(state_to_dict(obj), separators=(",", ":"))

    def decode(self, data: str) -> SiteState:
        return state_from_dict(exact_loads(data))


class SiteStateAsColumns(Transcoding):
    """The snapshot form written now: one JSON text, as SiteStateAsText, of the state's
    columnar form (ledger.state.state_to_columns): a list of values per object under its
    table's field names, a third of the text for 10,000 associations and a fraction of the
    time to parse and build."""

    type = SiteState
    name = "site_state_columns"

    def encode(self, obj: SiteState) -> str:
        return json.dumps(state_to_columns(obj), separators=(",", ":"))

    def decode(self, data: str) -> SiteState:
        return state_from_columns(exact_loads(data))


# Every form a stored snapshot may have, oldest first. All are read (a ledger keeps the
# snapshots of every release that wrote to it, and the newest one is loaded whatever its form);
# the library's encoder takes the transcoding registered last for a type, so the last is the
# form written.
SNAPSHOT_FORMS: tuple[type[Transcoding], ...] = (
    SiteStateAsDict,
    SiteStateAsText,
    SiteStateAsColumns,
)


class Ledger(Application):
    name = "Ledger"  # pinned: PostgreSQL table names (ledger_events) derive from it
    snapshotting_intervals = {Site: SNAPSHOT_INTERVAL}

    def __init__(
        self,
        store: StoreConfig,
        now: float | None = None,
        actor: str = "",
        create_tables: bool = False,
        conn: Connection | None = None,
    ) -> None:
        self.store = store
        self.requested_now = now
        self.actor = actor
        self.projector: Projector | None = None
        # Shown the Site a command is about to change, and whether the command records markers
        # alone (the projector keeps a copy of its state to fold the command's events onto,
        # instead of loading the Site a second time).
        self.before_command: Callable[[Site, bool], None] | None = None
        self._conn = conn
        self._owns_conn = False
        self._log_ready = False
        self._after_commit: list[Callable[[], None]] = []
        # Inside the append transaction (None outside it): what its projector left to write
        # before it commits, by name (ingest's period totals, added once for all the job batches
        # of its chunks); a later fold of the same transaction may take an entry over, and
        # _write runs the rest before the commit.
        self.before_commit: dict[str, Callable[[Connection], None]] | None = None
        self._register_types: Callable[[], None] = lambda: None  # PostgreSQL's: construct_factory
        # Only create-db makes the tables: concurrent DDL from every command that opens the
        # ledger would race in PostgreSQL's catalog ("tuple concurrently updated").
        env = dict(store.eventsourcing_env(), CREATE_TABLE="y" if create_tables else "n")
        # The append-only tables there are (one catalog query, which also guards them): on
        # PostgreSQL asked first, so that a missing log is known before the library looks.
        self.log_present: list[str] = []
        if store.is_postgres and not create_tables:
            self.log_present = append_only.protect(store, self.conn)
        super().__init__(env=env)
        bound_connection_waits(self.recorder, store)
        if not store.is_postgres:
            self.log_present = append_only.protect(store, conn)

    def construct_env(self, name: str, env: Any = None) -> Environment:
        """The library's settings from the store's URL alone. The library's own construct_env
        lays the process's environment over its defaults, so a variable set for anything else
        (COMPRESSOR_TOPIC, CIPHER_TOPIC, or LEDGER_POSTGRES_SCHEMA, which outranks the schema
        the URL names) would change how this ledger's log is written or where it is read."""
        settings = dict(type(self).env)
        if self.is_snapshotting_enabled or self.snapshotting_intervals:
            settings["IS_SNAPSHOTTING_ENABLED"] = "y"
        settings.update(env or {})
        return Environment(name, settings)

    def construct_factory(self, env: Any) -> Any:
        """The library's factory; its recorders read through this ledger's one connection
        (ledger.store.connections.SharedConnectionPool, SharedSQLitePool), not a pool of their
        own. Except while create-db makes the tables on SQLite: the library's own first
        connection puts a new file in WAL mode."""
        factory: Any = super().construct_factory(env)
        if self.store.is_postgres:
            factory.datastore.pool = SharedConnectionPool(lambda: self.conn)
            self._register_types = defer_type_adapters(factory.datastore, self.store)
        elif env.get("CREATE_TABLE") != "y":
            factory.datastore.pool = SharedSQLitePool(lambda: self.conn)
        return factory

    def construct_recorder(self) -> Any:
        recorder = super().construct_recorder()
        if self.store.is_postgres:
            registered_before_writes(recorder, self._register_types)
        return recorder

    def construct_snapshot_store(self) -> Any:
        snapshots = super().construct_snapshot_store()
        if snapshots is not None and self.store.is_postgres:
            registered_before_writes(snapshots.recorder, self._register_types)
        return snapshots

    def construct_repository(self) -> Repository[UUID]:
        """The library's repository, except that the Site is loaded without the events
        neutralized in the log (ledger.store.site_repository)."""
        return SiteRepository(
            SITE_ID,
            lambda version, stored: neutralizations.site_versions_after(
                _Read(stored), self.mapper, SITE_ID, version
            ),
            event_store=self.events,
            snapshot_store=self.snapshots,
        )

    def construct_transcoder(self) -> LedgerTranscoder:
        """The library's JSON transcoder, with a job batch's records written by orjson
        (ledger.store.transcoder)."""
        transcoder = LedgerTranscoder()
        self.register_transcodings(transcoder)
        return transcoder

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        for form in SNAPSHOT_FORMS:
            transcoder.register(form())

    # --- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        store: StoreConfig,
        now: float | None = None,
        actor: str = "",
        conn: Connection | None = None,
    ) -> Ledger:
        # A SQLite file is checked before the library opens it (which would create it).
        if not store.is_postgres and not event_table_exists(store, conn):
            raise LedgerMissing(store.missing_ledger())
        ledger = cls(store, now=now, actor=actor, conn=conn)
        events = append_only.table_names(store, ("events",))[0]
        if events not in ledger.log_present or not ledger.exists():
            ledger.close()
            raise LedgerMissing(store.missing_ledger())
        return ledger

    @classmethod
    def make_tables(cls, store: StoreConfig, conn: Connection | None = None) -> None:
        """Create the event store's tables and the log's own (create-db only: concurrent DDL
        from every command would race in PostgreSQL's catalog); on PostgreSQL through `conn`
        when given, the command's one connection."""
        shared = conn if store.is_postgres else None
        ensure_schema(store, conn=shared)
        cls(store, create_tables=True, conn=shared).close()
        own = shared is None
        conn = Connection(store) if own else shared
        assert conn is not None
        try:
            with conn.transaction():
                log_tables.create_tables(conn, log_tables.missing_tables(conn))
                log_tables.compress_states(conn)
            if own:
                append_only.install(store, append_only.table_names(store))
            else:
                with conn.transaction():
                    append_only.install_in(conn, append_only.table_names(store))
        finally:
            if own:
                conn.close()

    def initialize(
        self,
        half_life: float,
        reset_period: float,
        decay_factor: float,
        reason: str = "",
        fairshare_algorithm: str = WEIGHTED_WALK,
    ) -> None:
        """Record the ledger's first events: the site with its decay settings and fair-share
        algorithm, the job log."""
        config = default_config(half_life, reset_period, decay_factor, fairshare_algorithm)

        def first_events(conn: Connection) -> None:
            if log_tables.head_position(conn):
                raise AlreadyExists(f"a ledger already exists at {self.store.describe()}")
            stamp = self.stamp(reason)
            site = Site.create(stamp, epoch=stamp.at.timestamp(), config=config)
            joblog = JobLog.open(**stamp.kwargs())
            self._append(conn, [*site.collect_events(), *joblog.collect_events()])

        self._write(first_events)

    def exists(self) -> bool:
        return bool(self.recorder.max_notification_id())

    def write_through(self, conn: Connection) -> None:
        """Write (and project) through `conn`, a connection the caller owns (on PostgreSQL the
        library reads through it too)."""
        if self._conn is not None and self._conn is not conn and self._owns_conn:
            self._conn.close()
        self._conn, self._owns_conn = conn, False

    @property
    def conn(self) -> Connection:
        """The connection this ledger writes through (events, chain, keys, read models)."""
        if self._conn is None:
            self._conn = Connection(self.store)
            self._owns_conn = True
        return self._conn

    def close(self) -> None:
        # Once only: the library closes again from __del__, which the garbage collector may
        # run on another thread, where closing a SQLite connection raises.
        if self._conn is not None and self._owns_conn:
            self._conn.close()
        self._conn = None
        super().close()

    # --- the clock -------------------------------------------------------------------------------
    def newest_event_time(self) -> float | None:
        newest = log_tables.newest_event(self.conn)
        if newest is None:
            return None
        event: Any = self.mapper.to_domain_event(newest)
        return float(event.timestamp.timestamp())

    def now(self) -> datetime:
        """The ledger's time for the next change: --now if given, else the system clock, never
        earlier than the newest event (so log order is time order)."""
        newest = self.newest_event_time()
        if self.requested_now is not None:
            # Compare at the microsecond precision events are stored with.
            requested = to_datetime(self.requested_now)
            if newest is not None and requested.timestamp() < newest:
                raise ClockWentBackwards(
                    f"time {iso(self.requested_now)} is earlier than the newest event "
                    f"({iso(newest)}); the ledger's clock never runs backwards"
                )
            return requested
        return to_datetime(max(real_now(), newest or 0.0))

    def stamp(self, reason: str = "", source: dict[str, Any] | None = None) -> Stamp:
        actor, source = roles.attribution(self.store, self.actor, source or {}, self.conn)
        return Stamp(at=self.now(), actor=actor, reason=reason or "", source=source)

    # --- commands --------------------------------------------------------------------------------
    def site(self) -> Site:
        try:
            site: Any = self.repository.get(SITE_ID)
        except AggregateNotFoundError:
            raise LedgerMissing(self.store.missing_ledger()) from None
        assert isinstance(site, Site)
        return site

    def state(self) -> SiteState:
        return self.site().state

    def execute(
        self,
        command: Callable[[Site, Stamp], T],
        reason: str = "",
        source: dict[str, Any] | None = None,
        markers_only: bool = False,
    ) -> T:
        """Run one command against the state as it stands under the writers' lock and record
        its events with their projection, atomically. A LedgerError from the command, or a
        value the read models cannot hold, records nothing.

        `markers_only`: the command records markers alone (ev.MARKERS: usage or fair-share
        brought up to date), so before_command is told that it changes no more of the state
        than their update times; any other event it records is a programming error."""

        def work(conn: Connection) -> T:
            site = self.site()
            if self.before_command is not None:
                self.before_command(site, markers_only)
            result = command(site, self.stamp(reason, source))
            events = site.collect_events()
            if markers_only and not all(isinstance(e, ev.MARKERS) for e in events):
                raise RuntimeError(f"a markers-only command recorded {_kinds(events)}")
            if events:
                roles.check_may_record(self.store, events, conn)
            self._append(conn, events)
            return result

        return self._write(work)

    # --- jobs ------------------------------------------------------------------------------------
    def record_jobs(
        self,
        records: list[dict[str, Any]],
        reason: str = "",
        source: dict[str, Any] | None = None,
        digests: Sequence[str] | None = None,
        input_spans: Sequence[LogSpan] = (),
        expect_fresh: bool = False,
    ) -> Recorded:
        """Record the jobs the log does not hold yet, in one transaction.

        A (cluster, id) already in the log is a duplicate when it says the same, a conflict
        when it says something else; so is a repeat within `records`. The log's own key index
        decides, not a read model. `digests`: each record's `record_digest`, if the caller
        made them already (ingest's pass 1 does, where it validates each record).
        `input_spans`: where earlier transactions of the same input logged its records
        (Recorded.span); a conflict with a key logged there is told as one with an earlier
        line of the input, as a repeat within `records` is. `expect_fresh`: the caller
        expects the log to hold none of these keys (Recorded.fresh of its previous chunk), so
        that on PostgreSQL they are looked up only if one turns out to be there
        (_record_fresh)."""
        made = [record_digest(record) for record in records] if digests is None else digests
        if len(made) != len(records):
            raise ValueError(f"{len(made)} digests for {len(records)} records")
        return self._write(
            lambda conn: self._record_fresh(
                conn,
                records,
                made,
                reason,
                source,
                _InputPositions(tuple(input_spans)),
                expect_fresh,
            )
        )

    def record_job_chunks(
        self,
        chunks: Iterator[tuple[list[dict[str, Any]], list[str]]],
        kept: Callable[[Recorded], T],
        reason: str = "",
        source: dict[str, Any] | None = None,
        wait: bool = True,
    ) -> list[T]:
        """Record each chunk of (records, their digests) as record_jobs records it, all in one
        transaction, each chunk taken from `chunks` while it is open: ingest validates the
        rest of its input meanwhile, and an error raised while taking a chunk (a bad line)
        rolls back every chunk before it. What `kept` keeps of what each chunk gave (made as
        it is recorded, so that the records need not be held), in order, once committed.
        Without `wait`, WritersBusy, before any chunk is taken, if another writer holds the
        ledger.

        A job repeated in a later chunk is told as record_jobs tells a repeat within its
        records: against an earlier line of the input, not the position this transaction gave
        it. Only the lock is retried: a transaction that has taken a chunk cannot take it
        again, so a lost race after that ends the write."""

        taken = False

        def work(conn: Connection) -> list[T]:
            nonlocal taken
            if taken:
                raise WriteFailed("a concurrent writer took the ledger part-way through")
            own = _InputPositions(after=log_tables.head_position(conn))
            outcomes = []
            expect_fresh = False  # the first chunk is looked up: a re-run repeats its start
            for records, digests in chunks:
                taken = True
                outcome = self._record_fresh(
                    conn, records, digests, reason, source, own, expect_fresh
                )
                expect_fresh = outcome.fresh
                outcomes.append(kept(outcome))
            return outcomes

        return self._write(work, wait)

    def _record_fresh(
        self,
        conn: Connection,
        records: list[dict[str, Any]],
        digests: Sequence[str],
        reason: str,
        source: dict[str, Any] | None,
        own: _InputPositions,
        expect_fresh: bool = False,
    ) -> Recorded:
        """In the open transaction: the records the log does not hold yet, appended. A
        conflict with a key logged where `own` says this input's earlier records went is one
        with an earlier line of the input (position 0).

        With `expect_fresh`, on PostgreSQL, the keys are not looked up first: the batches and
        their keys go in under a savepoint, and the key index's refusal of one already there
        undoes both, after which the records are looked up as without it. There a lookup
        costs about 4 µs a job (500 ids a query, a round trip each), and a backfill's chunks
        after the first hold no logged key; the key rows' insert checks each key in the index
        anyway. SQLite looks its keys up in process, for less than its savepoint costs
        (200,000 jobs took 7.25 s against 6.93, the medians of six runs each, with more time
        in the kernel, as a savepoint's journal of the pages it changes would take)."""

        def against(logged: dict[tuple[str, str], tuple[str, int]] | None) -> Recorded:
            # Against `logged`, the keys the log holds, or None where they were not looked
            # up: then only a repeat within `records` is told apart here, and a key the log
            # holds raises _KeyHeld before anything is linked or projected.
            outcome = Recorded(fresh=not logged)
            known = logged or {}
            fresh: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
            for record, digest in zip(records, digests, strict=True):
                key = job_key(record)
                earlier = known.get(key) or ((fresh[key][1], 0) if key in fresh else None)
                if earlier is None:
                    fresh[key] = (record, digest)
                elif earlier[0] == digest:
                    outcome.duplicate += 1
                else:
                    position = earlier[1]
                    outcome.conflicts.append(Conflict(key, 0 if own.holds(position) else position))
            kept = list(fresh.values())
            self._append_jobs(conn, kept, reason, source, outcome, unlooked=logged is None)
            return outcome

        if expect_fresh and conn.config.is_postgres:
            try:
                with conn.savepoint("unlooked_keys"):
                    return against(None)
            except _KeyHeld:
                pass
        return against(log_tables.known_keys(conn, [job_key(r) for r in records]))

    def _append_jobs(
        self,
        conn: Connection,
        kept: list[tuple[dict[str, Any], str]],
        reason: str,
        source: dict[str, Any] | None,
        outcome: Recorded,
        unlooked: bool = False,
    ) -> None:
        """(record, digest) pairs none of whose keys the log holds, appended in batches with
        their keys; `outcome` told what was recorded and where. `unlooked`: the keys were not
        looked up, and one the log holds raises _KeyHeld."""
        if not kept:
            return
        head = log_tables.stream_version(conn, JOBLOG_ID)
        stamp = self.stamp(reason, source)
        batches = [
            JobLog.JobsRecorded(  # type: ignore[call-arg]
                originator_id=JOBLOG_ID,
                originator_version=head + 1 + n,
                records=[r for r, _ in kept[start : start + BATCH_SIZE]],
                **stamp.kwargs(),
            )
            for n, start in enumerate(range(0, len(kept), BATCH_SIZE))
        ]

        def key_rows(positions: list[int]) -> None:
            # In bulk (COPY on PostgreSQL), not log_tables.insert_keys's ON CONFLICT: a key
            # already there must be refused (known_keys has just shown none is, or the caller
            # expects none). Each row made as the COPY sends it (Connection.insert_rows).
            rows = (
                (*job_key(record), digest, position)
                for position, start in zip(positions, range(0, len(kept), BATCH_SIZE), strict=True)
                for record, digest in kept[start : start + BATCH_SIZE]
            )
            try:
                conn.insert_rows(log_tables.JOB_KEYS, log_tables.JOB_KEY_COLUMNS, rows)
            except conn.duplicate_key_errors() as err:
                if unlooked:
                    raise _KeyHeld(str(err)) from err
                raise

        positions = self._append(conn, batches, key_rows)
        outcome.recorded = [r for r, _ in kept]
        outcome.span = (positions[0], positions[-1])

    def refresh_statistics(self, read_models: Sequence[str]) -> None:
        """After a large load: fresh planner statistics for those of the log's tables and
        `read_models` that have outgrown theirs (Connection.outgrown_statistics): at 3M jobs,
        analyzing every one after 200,000 more took 2.2 s of an 11.6 s ingest, for statistics
        still within a tenth of the tables they describe."""
        conn = self.conn
        tables = [log_tables.events_table(conn), *log_tables.LOG_TABLES, *read_models]
        conn.analyze(conn.outgrown_statistics(tables))

    # --- the append transaction ------------------------------------------------------------------
    def _write(self, work: Callable[[Connection], T], wait: bool = True) -> T:
        """Run `work` in one transaction under the writers' lock; retry, with jittered backoff,
        when the lock cannot be had in time or a writer outside the lock (an older release)
        appended first. Without `wait`, WritersBusy if another writer holds the lock."""
        conn = self.conn
        for attempt in range(MAX_ATTEMPTS):
            self._after_commit = []
            self.before_commit = {}
            try:
                with log_tables.locked(conn, wait):
                    self._prepare_log(conn)
                    result = work(conn)
                    for name in list(self.before_commit):
                        _projected(self.before_commit.pop(name), conn)
            except Exception as err:
                if _database_error(err) and not _transient(err):
                    raise WriteFailed(f"database error: {_first_line(err)}") from err
                if not _transient(err):
                    raise
                if attempt < MAX_ATTEMPTS - 1:
                    time.sleep(random.uniform(0, BACKOFF_SECONDS * 2**attempt))
                continue
            finally:
                self.before_commit = None  # rolled back with its transaction, or run
            for hook in self._after_commit:
                hook()
            return result
        raise ConcurrentUpdate(
            f"gave up after {MAX_ATTEMPTS} attempts: the ledger stayed locked by other writers"
        )

    def _prepare_log(self, conn: Connection) -> None:
        """Once per process: the log's own tables, and the key index of a ledger written
        before it existed."""
        if self._log_ready:
            return
        # Tables of the log are never dropped: those seen at opening need no second look.
        seen = set(self.log_present)
        if not all(name in seen for name in log_tables.LOG_TABLES):
            missing = log_tables.missing_tables(conn)
            if missing:
                log_tables.create_tables(conn, missing)
                append_only.install_in(conn, missing)
        rows: list[tuple[str, str, str, int]] = []
        for position, originator, version, row_topic, state in log_tables.stored_after(
            conn, log_tables.AFTER_KEYS, get_topic(JobLog.JobsRecorded)
        ):
            event: Any = self.mapper.to_domain_event(
                StoredEvent(
                    originator_id=UUID(originator),
                    originator_version=version,
                    topic=row_topic,
                    state=state,
                )
            )
            rows.extend((*job_key(r), record_digest(r), position) for r in event.records)
            if len(rows) >= 5000:
                log_tables.insert_keys(conn, rows)
                rows = []
        log_tables.insert_keys(conn, rows)
        # Only once this transaction commits: a rolled-back first write takes the tables with it.
        self._after_commit.append(lambda: setattr(self, "_log_ready", True))

    def _append(
        self,
        conn: Connection,
        events: Sequence[Any],
        inserted: Callable[[list[int]], None] | None = None,
    ) -> list[int]:
        """Insert `events`, link them into the chain and project them, in the open
        transaction; their log positions. `inserted(positions)` runs once they are inserted,
        before anything is linked or projected: an error it raises leaves only the inserts
        to undo."""
        if not events:
            return []
        if self.projector is None:
            raise RuntimeError("a ledger records events only with its projector attached")
        try:
            positions = log_tables.insert_events(
                conn, [self.mapper.to_stored_event(e) for e in events]
            )
        except _integrity_errors() as err:
            raise _AppendConflict(str(err)) from err
        if inserted is not None:
            inserted(positions)
        log_tables.extend_chain(conn)
        keep = _projected(self.projector, conn, list(zip(positions, events, strict=True)))
        self._after_commit.append(keep)
        # Only the site's events, not the jobs': a transaction of many job batches (ingest's)
        # would hold every record until it commits.
        site = [e for e in events if e.originator_id == SITE_ID]
        if site:
            self._after_commit.append(lambda: self._snapshot(site))
        return positions

    def _snapshot(self, site: Sequence[Any]) -> None:
        """At most one snapshot per save of `site` events, at the newest interval it reaches:
        an import saves thousands of Site events at once, and its intermediate versions share
        one time."""
        versions = [
            e.originator_version for e in site if e.originator_version % SNAPSHOT_INTERVAL == 0
        ]
        if any(isinstance(e, ev.EventNeutralized) for e in site):
            # A snapshot after the neutralized event holds it: one now lets loads skip those.
            versions.append(site[-1].originator_version)
        if not versions:
            return
        try:
            self.take_snapshot(SITE_ID, version=max(versions))
        except Exception as err:
            # After the commit, through the library's connection: a snapshot only speeds up
            # loading, and the next interval takes another; the change itself is recorded.
            if not _database_error(err):
                raise


@dataclass(frozen=True)
class _Read:
    """Stored events already read, offered as the recorder a neutralization lookup reads (the
    Site's loader reads the stream once for the lookup and the replay)."""

    stored: Sequence[StoredEvent]

    def select_events(self, originator_id: UUID, gt: int = 0) -> Sequence[StoredEvent]:
        return [e for e in self.stored if e.originator_version > gt]


@dataclass(frozen=True)
class Conflict:
    """A job whose (cluster, id) the log holds with other content (position 0: earlier in the
    same input)."""

    key: tuple[str, str]
    position: int


# The first and last log positions of the events one transaction appended.
LogSpan = tuple[int, int]


@dataclass
class Recorded:
    recorded: list[dict[str, Any]] = field(default_factory=list)
    duplicate: int = 0
    conflicts: list[Conflict] = field(default_factory=list)
    span: LogSpan | None = None  # where the records went (None: none was recorded)
    # The log held none of the keys (their lookup found none, or none was needed): the
    # input's next chunk may skip its lookup (Ledger._record_fresh's expect_fresh).
    fresh: bool = False


@dataclass(frozen=True)
class _InputPositions:
    """Where one input's earlier records are logged: `spans` its earlier transactions
    appended, and anything after position `after` (this transaction's own, when it records
    the input in several chunks)."""

    spans: tuple[LogSpan, ...] = ()
    after: int | None = None

    def holds(self, position: int) -> bool:
        if self.after is not None and position > self.after:
            return True
        return any(first <= position <= last for first, last in self.spans)


class _KeyHeld(Exception):
    """A job key inserted without a lookup is already in the log (Ledger._record_fresh, with
    `expect_fresh`)."""


class _AppendConflict(Exception):
    """A writer outside the lock took a version we meant to append: retry against it."""


def _projected(call: Callable[..., T], *args: Any) -> T:
    """The projector's work in the append transaction (`call(*args)`), an error the read models
    cannot hold (a value out of their range) told as such: nothing is recorded."""
    try:
        return call(*args)
    except unprojectable_errors() as err:
        raise Unprojectable(
            f"the read models cannot hold this change ({_first_line(err)}); nothing recorded"
        ) from None


def _integrity_errors() -> tuple[type[BaseException], ...]:
    import sqlite3

    import psycopg

    return (sqlite3.IntegrityError, psycopg.errors.IntegrityError, IntegrityError)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _database_error(err: BaseException) -> bool:
    """The store's own failure (a full disk, a lost connection), not a rule of the ledger."""
    import sqlite3

    import psycopg
    from eventsourcing.persistence import PersistenceError

    return isinstance(err, sqlite3.Error | psycopg.Error | PersistenceError)


def _transient(err: BaseException) -> bool:
    """A lock that could not be had in time, or a lost race: worth another attempt."""
    import sqlite3

    import psycopg

    if isinstance(err, _AppendConflict):
        return True
    if isinstance(err, sqlite3.OperationalError):
        return "locked" in str(err) or "busy" in str(err)
    return isinstance(
        err,
        psycopg.errors.LockNotAvailable
        | psycopg.errors.SerializationFailure
        | psycopg.errors.DeadlockDetected,
    )


def _kinds(events: Sequence[Any]) -> str:
    return ", ".join(type(event).__name__ for event in events)
