"""The Ledger application: one eventsourcing Application, one ordered log for every change.

Commands load the Site aggregate (from its newest snapshot), let it validate and trigger events,
and save them in one transaction; an optimistic-concurrency conflict reloads and retries, so two
writers never lose each other's updates. Time comes from one clock that never runs backwards.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, JSONTranscoder, Transcoding

from ledger import append_only, roles
from ledger.clock import iso, to_datetime
from ledger.errors import AlreadyExists, ClockWentBackwards, ConcurrentUpdate, LedgerMissing
from ledger.joblog import BATCH_SIZE, JOBLOG_ID, JobLog, job_key
from ledger.site import SITE_ID, Site, Stamp, default_config
from ledger.state import SiteState, state_from_dict, state_to_dict
from ledger.storage import StoreConfig, bound_connection_waits, ensure_schema, event_table_exists

T = TypeVar("T")
MAX_ATTEMPTS = 8
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
    """The site state in a snapshot, as one JSON text: the library's transcoder calls a Python
    hook per decoded object, which made a 10k-association snapshot take ~0.4 s to load; one
    string is decoded by the C parser instead."""

    type = SiteState
    name = "site_state_json"

    def encode(self, obj: SiteState) -> str:
        return json.dumps(state_to_dict(obj), separators=(",", ":"))

    def decode(self, data: str) -> SiteState:
        return state_from_dict(json.loads(data))


class Ledger(Application):
    name = "Ledger"  # pinned: PostgreSQL table names (ledger_events) derive from it
    snapshotting_intervals = {Site: SNAPSHOT_INTERVAL}

    def __init__(
        self,
        store: StoreConfig,
        now: float | None = None,
        actor: str = "",
        create_tables: bool = False,
    ) -> None:
        self.store = store
        self.requested_now = now
        self.actor = actor
        # Only create-db makes the tables: concurrent DDL from every command that opens the
        # ledger would race in PostgreSQL's catalog ("tuple concurrently updated").
        env = dict(store.eventsourcing_env(), CREATE_TABLE="y" if create_tables else "n")
        super().__init__(env=env)
        bound_connection_waits(self.recorder, store)
        append_only.protect(store, self.recorder)

    def _take_snapshots(self, processing_event: Any) -> None:
        """At most one snapshot per aggregate and save, at the newest interval it reaches.

        The library takes one at every multiple of the interval, each a copy of the whole site
        state rebuilt by replay: an import saves thousands of Site events at once, and its
        intermediate versions share one time, so no read ever asks for them."""
        newest: dict[Any, int] = {}
        for event in processing_event.events:
            aggregate = processing_event.aggregates.get(event.originator_id)
            if aggregate is None:
                continue
            interval = self.snapshotting_intervals.get(type(aggregate))
            if interval and event.originator_version % interval == 0:
                newest[event.originator_id] = event.originator_version
        for aggregate_id, version in newest.items():
            self.take_snapshot(aggregate_id, version=version)

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        transcoder.register(SiteStateAsDict())
        transcoder.register(SiteStateAsText())  # registered last: the form written

    # --- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, store: StoreConfig, now: float | None = None, actor: str = "") -> Ledger:
        if not event_table_exists(store):
            raise LedgerMissing(
                f"no ledger at {store.describe()}: run 'fairledger create-db' first"
            )
        ledger = cls(store, now=now, actor=actor)
        if not ledger.exists():
            ledger.close()
            raise LedgerMissing(
                f"no ledger at {store.describe()}: run 'fairledger create-db' first"
            )
        return ledger

    @classmethod
    def create(
        cls,
        store: StoreConfig,
        half_life: float,
        reset_period: float,
        decay_factor: float,
        now: float | None = None,
        actor: str = "",
        reason: str = "",
    ) -> Ledger:
        config = default_config(half_life, reset_period, decay_factor)
        ensure_schema(store)
        ledger = cls(store, now=now, actor=actor, create_tables=True)
        if ledger.exists():
            ledger.close()
            raise AlreadyExists(f"a ledger already exists at {store.describe()}")
        stamp = ledger.stamp(reason)
        site = Site.create(stamp, epoch=stamp.at.timestamp(), config=config)
        joblog = JobLog.open(**stamp.kwargs())
        try:
            ledger.save(site, joblog)
        except IntegrityError:
            ledger.close()
            raise AlreadyExists(f"a ledger already exists at {store.describe()}") from None
        return ledger

    def exists(self) -> bool:
        return bool(self.recorder.max_notification_id())

    # --- the clock -------------------------------------------------------------------------------
    def newest_event_time(self) -> float | None:
        last_id = self.recorder.max_notification_id()
        if not last_id:
            return None
        (notification,) = self.recorder.select_notifications(start=last_id, limit=1)
        event: Any = self.mapper.to_domain_event(notification)
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
        return to_datetime(max(time.time(), newest or 0.0))

    def stamp(self, reason: str = "", source: dict[str, Any] | None = None) -> Stamp:
        actor, source = roles.attribution(self.store, self.actor, source or {})
        return Stamp(at=self.now(), actor=actor, reason=reason or "", source=source)

    # --- commands --------------------------------------------------------------------------------
    def site(self) -> Site:
        try:
            site: Any = self.repository.get(SITE_ID)
        except AggregateNotFoundError:
            raise LedgerMissing(
                f"no ledger at {self.store.describe()}: run 'fairledger create-db' first"
            ) from None
        assert isinstance(site, Site)
        return site

    def state(self) -> SiteState:
        return self.site().state

    def execute(
        self,
        command: Callable[[Site, Stamp], T],
        reason: str = "",
        source: dict[str, Any] | None = None,
    ) -> T:
        """Run one command against fresh state and record its events atomically; retry on a
        concurrent writer's conflict. A LedgerError from the command records nothing."""
        for _attempt in range(MAX_ATTEMPTS):
            site = self.site()
            result = command(site, self.stamp(reason, source))
            if not site.pending_events:
                return result
            roles.check_may_record(self.store, site.pending_events)
            try:
                self.save(site)
            except IntegrityError:
                continue  # another writer got there first: re-check against its state
            return result
        raise ConcurrentUpdate(
            f"gave up after {MAX_ATTEMPTS} attempts: other writers kept changing the site"
        )

    # --- jobs ------------------------------------------------------------------------------------
    def joblog_version(self) -> int:
        (last,) = self.events.get(JOBLOG_ID, desc=True, limit=1)
        return int(last.originator_version)

    def record_jobs(
        self,
        records: list[dict[str, Any]],
        sync: Callable[[], object],
        known: Callable[[list[tuple[str, str]]], set[tuple[str, str]]],
        reason: str = "",
        source: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Record the jobs not yet in the log, in one transaction; returns those recorded.

        `sync` brings the jobs read model up to the log's head and `known` says which keys it
        already holds. Reading the job log's version before syncing makes the check exact: a
        batch appended by someone else after that read conflicts with ours on the version."""
        for _attempt in range(MAX_ATTEMPTS):
            head = self.joblog_version()
            sync()
            already = known([job_key(r) for r in records])
            fresh = [r for r in records if job_key(r) not in already]
            if not fresh:
                return []
            stamp = self.stamp(reason, source)
            batches = [
                JobLog.JobsRecorded(  # type: ignore[call-arg]
                    originator_id=JOBLOG_ID,
                    originator_version=head + 1 + n,
                    records=fresh[start : start + BATCH_SIZE],
                    **stamp.kwargs(),
                )
                for n, start in enumerate(range(0, len(fresh), BATCH_SIZE))
            ]
            try:
                self.save(*batches)
            except IntegrityError:
                continue  # another ingester appended first: re-check against its jobs
            return fresh
        raise ConcurrentUpdate(
            f"gave up after {MAX_ATTEMPTS} attempts: other ingesters kept appending"
        )
