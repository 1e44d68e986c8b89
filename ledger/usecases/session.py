"""One command's hold on the ledger: the store it names, the Ledger application writing through
one connection, the read models caught up before a read, and the moment a past read means."""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, Any, TypeVar

from ledger.clock import (
    AsOf,
    TimeSpec,
    check_not_after_clock,
    check_requested_now,
    parse_time_spec,
    zone_named,
)
from ledger.collector import collect_less, set_aside, take_back
from ledger.errors import LedgerError, LedgerMissing
from ledger.site_config import WEIGHTED_WALK
from ledger.store.connections import (
    DEFAULT_URL,
    Connection,
    StoreConfig,
    event_table_exists,
    parse_store_url,
    sqlite_file_exists,
)
from projections.queries import freshness

# The Ledger application, the Site aggregate and the projector are imported where a session
# first needs them: a read whose read models are current needs none of them, and importing them
# is most of a small read's start-up.
if TYPE_CHECKING:
    from ledger.site import Site, Stamp
    from ledger.store.application import Ledger
    from projections.queries import as_of as as_of_view

T = TypeVar("T")
Warn = Callable[[str], None]


def default_actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


@contextmanager
def _the_invocations_own() -> Iterator[None]:
    """Errors of what the whole invocation names (--db, --now, the FAIRLEDGER_* settings), not
    of a command's arguments or rules: flux-accounting has no counterpart, so they carry no
    exception type of its (ledger.errors.LedgerError.exception_name)."""
    try:
        yield
    except LedgerError as err:
        if err.exception_name is None:
            err.exception_name = ""
        raise


def _ignore(message: str) -> None:
    """Where a session's notes go when its caller wants none."""


class Session:
    """`warn` receives the lines a front end shows beside its answer (a lagging read model, the
    moment an as-of answer reflects), so stdout stays the answer alone."""

    def __init__(
        self, db_url: str | StoreConfig | None, now: str | None, warn: Warn = _ignore
    ) -> None:
        # A StoreConfig: a store derived from another (the demo's Slurm ledger beside its own).
        with _the_invocations_own():
            self.store: StoreConfig = (
                db_url
                if isinstance(db_url, StoreConfig)
                else parse_store_url(db_url or DEFAULT_URL)
            )
        self.warn = warn
        collect_less()
        self._ledger: Ledger | None = None
        # Whether opening the ledger rebuilt its read models (their layout had changed).
        self.rebuilt_on_open = False
        self._conn: Connection | None = None
        self._now: float | None = None
        self._requested_now: TimeSpec | None = None  # a wall-clock --now, until the zone is known
        self.set_typed_now(now)
        # On PostgreSQL the recorded actor is the session's role (ledger/store/roles.py): only a
        # given --actor is kept, as who it acted for.
        self.actor = "" if self.store.is_postgres else default_actor()

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            with _the_invocations_own():
                self._ledger = self._open()
        return self._ledger

    def _open(self) -> Ledger:
        from ledger.store.application import Ledger
        from projections.writers import runner

        # The ledger (and on PostgreSQL the library under it) uses this command's one
        # connection from the start; on SQLite only once the file is known to exist, since
        # connecting would create a missing one.
        conn = self.conn if self.store.is_postgres or sqlite_file_exists(self.store) else None
        ledger = Ledger.open(self.store, now=self._now, actor=self.actor, conn=conn)
        ledger.write_through(self.conn)
        if self._requested_now is not None:
            try:
                self._now = check_requested_now(self._requested_now, _site_zone(ledger))
            except BaseException:
                ledger.close()
                raise
            self._requested_now = None
            ledger.requested_now = self._now
        _attach(ledger)
        self.rebuilt_on_open = runner.prepare(self.conn, ledger)
        return ledger

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            with _the_invocations_own():
                self._conn = Connection(self.store)
        return self._conn

    def describe_store(self) -> str:
        return self.store.describe()

    @property
    def now(self) -> float | None:
        """`--now` in epoch seconds (None: the real clock). A --now without a zone is a wall
        clock time in the site's zone, like every other time: it opens the ledger to read it,
        and where there is no ledger yet (create-db) the zone a new site has, UTC."""
        if self._requested_now is not None:
            try:
                self.ledger  # noqa: B018 (opening it resolves the --now)
            except LedgerMissing:
                with _the_invocations_own():
                    self._now = check_requested_now(self._requested_now, UTC)
                self._requested_now = None
        return self._now

    def set_typed_now(self, text: str | None) -> None:
        """`--now` as typed (None: the real clock)."""
        with _the_invocations_own():
            self.set_now(parse_time_spec(text) if text else None)

    def set_now(self, now: float | TimeSpec | None) -> None:
        """Move this session's clock (the demo and imports replay time forward). A time that
        needs the site's zone is resolved when the ledger is opened; any other is checked now,
        so a --now out of bounds is refused before anything is read."""
        self._requested_now = None
        if isinstance(now, TimeSpec):
            if now.needs_zone:
                self._requested_now, now = now, None
            else:
                with _the_invocations_own():
                    now = check_requested_now(now, UTC)
        self._now = now
        if self._ledger is not None:
            if self._requested_now is not None:
                with _the_invocations_own():
                    zone = _site_zone(self._ledger)
                    self._now = check_requested_now(self._requested_now, zone)
                self._requested_now = None
            self._ledger.requested_now = self._now

    def zone(self) -> tzinfo:
        """The site's `timezone` config: the zone of a time typed without one."""
        return _site_zone(self.ledger)

    def when(self, spec: TimeSpec) -> float:
        """Epoch seconds for a time as typed: a zone-less one in the site's zone, a duration
        ago before the ledger's now. Only what the time needs is read: an absolute time asks
        neither (the ledger's now refuses a --now earlier than the newest event)."""
        now = self.ledger.now().timestamp() if spec.needs_now else None
        return spec.resolve(now, self.zone() if spec.needs_zone else UTC)

    def create_ledger(
        self,
        half_life: float,
        reset_period: float,
        decay_factor: float,
        now: float | None,
        actor: str,
        reason: str,
        fairshare_algorithm: str = WEIGHTED_WALK,
    ) -> Ledger:
        """A new ledger at this session's store, its first events projected as they land."""
        from ledger.store.application import Ledger
        from projections.writers import runner

        Ledger.make_tables(self.store, self.conn if self.store.is_postgres else None)
        ledger = Ledger(self.store, now=now, actor=actor, conn=self.conn)
        _attach(ledger)
        runner.prepare(self.conn, ledger)
        ledger.initialize(
            half_life,
            reset_period,
            decay_factor,
            reason=reason,
            fairshare_algorithm=fairshare_algorithm,
        )
        self._ledger = ledger
        return ledger

    def read(self, as_of: AsOf | None = None) -> Connection:
        """The read models, caught up with the log; with `as_of`, as they stood then (the
        moment it reflects goes to `warn`)."""
        self._catch_up_for_read()
        if as_of is None:
            return self.conn
        from projections.queries import as_of as as_of_view

        moment = self.moment(as_of)
        self.warn(moment.describe())
        return as_of_view.materialize(self.ledger, self.conn, moment)

    def _catch_up_for_read(self) -> None:
        if self._ledger is None and self._read_models_current():
            return
        lag = freshness.catch_up_if_allowed(self.ledger, self.conn)
        if lag:
            self.warn(f"fairledger: warning: {lag}")

    def _read_models_current(self) -> bool:
        """Whether a read may answer without opening the Ledger application: the log is there
        and guarded (what opening it checks and installs) and the read models reflect all of it
        in this release's layout. Anything else (no ledger, read models behind or laid out by
        another release, a --now waiting for the site's zone) takes the full path, which says or
        does what it must."""
        from ledger.store import append_only

        if self._requested_now is not None:
            return False
        if not self.store.is_postgres and not (
            sqlite_file_exists(self.store) and event_table_exists(self.store, self.conn)
        ):
            return False  # the file first: connecting would create it
        present = append_only.protect(self.store, self.conn)
        if append_only.table_names(self.store, ("events",))[0] not in present:
            return False
        return freshness.current(self.conn)

    def moment(self, as_of: AsOf, option: str = "--as-of") -> as_of_view.Moment:
        """The log position `as_of` means. A moment after the ledger's now is refused: events
        may still be recorded before it, so its answer could still change."""
        from projections.queries import as_of as as_of_view

        self._catch_up_for_read()
        return as_of_view.moment_at(self.conn, self.past(as_of, option))

    def past(self, spec: TimeSpec, option: str) -> float:
        """Epoch seconds of a past moment asked about, no later than the ledger's now."""
        now = self.ledger.now().timestamp()
        at = spec.resolve(now, self.zone() if spec.needs_zone else UTC)
        return check_not_after_clock(option, spec, at, now)

    def change(
        self,
        command: Callable[[Site, Stamp], T],
        reason: str | None = None,
        actor: str | None = None,
        source: dict[str, Any] | None = None,
        markers_only: bool = False,
    ) -> T:
        """Run `command` on the site and record its events (Ledger.execute; `markers_only`
        is its own)."""
        ledger = self.ledger
        ledger.actor = actor or self.actor
        return ledger.execute(
            command, reason=reason or "", source=source, markers_only=markers_only
        )

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            take_back()
        if self._conn is not None:
            self._conn.close()


def _attach(ledger: Ledger) -> None:
    """The projector attached to `ledger` (runner.attach), and the collector kept off the Site
    each command loads: once it is loaded, and again once the projector has kept its copy of
    the state, what is alive is set aside (collector.set_aside), else the copy's allocations
    set off a collection that walks the Site just loaded."""
    from projections.writers import runner

    runner.attach(ledger)
    projector_hook = ledger.before_command

    def before_command(site: Site, markers_only: bool) -> None:
        set_aside()
        if projector_hook is not None:
            projector_hook(site, markers_only)
            set_aside()

    ledger.before_command = before_command


def _site_zone(ledger: Ledger) -> tzinfo:
    return zone_named(ledger.state().timezone)
