"""One command's hold on the ledger: the store it names, the Ledger application writing through
one connection, the read models caught up before a read, and the moment a past read means."""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable
from typing import Any, TypeVar

from ledger.clock import AsOf, parse_time
from ledger.site import Site, Stamp
from ledger.store.application import Ledger
from ledger.store.connections import DEFAULT_URL, Connection, StoreConfig, parse_store_url
from projections.queries import as_of as as_of_view
from projections.queries import freshness
from projections.writers import runner

T = TypeVar("T")
Warn = Callable[[str], None]


def default_actor() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}"


def _ignore(message: str) -> None:
    """Where a session's notes go when its caller wants none."""


class Session:
    """`warn` receives the lines a front end shows beside its answer (a lagging read model, the
    moment an as-of answer reflects), so stdout stays the answer alone."""

    def __init__(self, db_url: str | None, now: str | None, warn: Warn = _ignore) -> None:
        self.store: StoreConfig = parse_store_url(db_url or DEFAULT_URL)
        self.now: float | None = parse_time(now) if now else None
        self.warn = warn
        self._ledger: Ledger | None = None
        self._conn: Connection | None = None
        # On PostgreSQL the recorded actor is the session's role (ledger/store/roles.py): only a
        # given --actor is kept, as who it acted for.
        self.actor = "" if self.store.is_postgres else default_actor()

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            # On SQLite opened before our connection exists: connecting would create a missing
            # file, with the umask's mode instead of create-db's 0600. On PostgreSQL the ledger
            # (and the library under it) uses this command's one connection from the start.
            conn = self.conn if self.store.is_postgres else None
            ledger = Ledger.open(self.store, now=self.now, actor=self.actor, conn=conn)
            ledger.write_through(self.conn)
            runner.attach(ledger)
            runner.prepare(self.conn, ledger)
            self._ledger = ledger
        return self._ledger

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            self._conn = Connection(self.store)
        return self._conn

    def describe_store(self) -> str:
        return self.store.describe()

    def set_now(self, now: float | None) -> None:
        """Move this session's clock (the demo and imports replay time forward)."""
        self.now = now
        if self._ledger is not None:
            self._ledger.requested_now = now

    def create_ledger(
        self,
        half_life: float,
        reset_period: float,
        decay_factor: float,
        now: float | None,
        actor: str,
        reason: str,
    ) -> Ledger:
        """A new ledger at this session's store, its first events projected as they land."""
        Ledger.make_tables(self.store, self.conn if self.store.is_postgres else None)
        ledger = Ledger(self.store, now=now, actor=actor, conn=self.conn)
        runner.attach(ledger)
        runner.prepare(self.conn, ledger)
        ledger.initialize(half_life, reset_period, decay_factor, reason=reason)
        self._ledger = ledger
        return ledger

    def read(self, as_of: AsOf | None = None) -> Connection:
        """The read models, caught up with the log; with `as_of`, as they stood then (the
        moment it reflects goes to `warn`)."""
        self._catch_up_for_read()
        if as_of is None:
            return self.conn
        moment = self.moment(as_of)
        self.warn(moment.describe())
        return as_of_view.materialize(self.ledger, self.conn, moment)

    def _catch_up_for_read(self) -> None:
        lag = freshness.catch_up_if_allowed(self.ledger, self.conn)
        if lag:
            self.warn(f"fairledger: warning: {lag}")

    def moment(self, as_of: AsOf) -> as_of_view.Moment:
        self._catch_up_for_read()
        return as_of_view.moment_at(self.conn, as_of.resolve(self.ledger.now().timestamp()))

    def change(
        self,
        command: Callable[[Site, Stamp], T],
        reason: str | None = None,
        actor: str | None = None,
        source: dict[str, Any] | None = None,
    ) -> T:
        ledger = self.ledger
        ledger.actor = actor or self.actor
        return ledger.execute(command, reason=reason or "", source=source)

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
        if self._conn is not None:
            self._conn.close()
