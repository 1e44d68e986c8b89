"""Administering a ledger: create it, rebuild and verify its read models, grant roles, and find
(and set aside) the events its read models cannot apply."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.errors import InvalidValue
from ledger.site_config import WEIGHTED_WALK
from ledger.store import append_only, roles
from ledger.store.application import Ledger
from ledger.store.connections import ensure_schema
from ledger.usecases.session import Session
from projections.writers import runner

if TYPE_CHECKING:
    # Imported when called: every command starts by importing the CLI, and these only verify
    # and doctor need.
    from projections.doctor import Finding
    from projections.verify import Verified


def create_ledger(
    session: Session,
    half_life: float,
    reset_period: float,
    decay_factor: float,
    group_readable: bool,
    actor: str | None,
    reason: str | None,
    fairshare_algorithm: str = WEIGHTED_WALK,
) -> str:
    """A new, empty ledger at the session's store; returns how the store describes itself."""
    if not 0.0 < decay_factor < 1.0:
        raise InvalidValue(f"invalid decay factor: {decay_factor} (must be 0 < F < 1)")
    if half_life <= 0:
        raise InvalidValue(f"invalid half-life: {half_life} (must be > 0)")
    if group_readable:
        if session.store.is_postgres:
            raise InvalidValue("--group-readable is for SQLite; on PostgreSQL use 'grant --reader'")
        ensure_schema(session.store, group_readable=True)
    session.create_ledger(
        half_life,
        reset_period,
        decay_factor,
        now=session.now,
        actor=actor or session.actor,
        reason=reason or "",
        fairshare_algorithm=fairshare_algorithm,
    )
    return session.store.describe()


@dataclass(frozen=True)
class Rebuilt:
    position: int | None  # the log position the read models now reflect (None: an empty log)
    seconds: float


def rebuild(session: Session) -> Rebuilt:
    """Drop every read model and fold the whole log into new ones: once, even when opening
    the ledger already did so because their layout had changed (an upgrade's first command)."""
    started = time.perf_counter()  # opening the ledger counts: it is part of the wait
    ledger = session.ledger
    if not session.rebuilt_on_open:
        runner.rebuild(ledger, session.conn)
    position = ledger.recorder.max_notification_id()
    return Rebuilt(position, time.perf_counter() - started)


@dataclass(frozen=True)
class VerifyReport:
    verified: Verified
    seconds: float


def verify(session: Session) -> VerifyReport:
    """The hash chain walked, and the read models compared with a rebuild from the log; a break
    raises TamperedLog naming it."""
    from projections.verify import verify as verify_ledger

    started = time.perf_counter()
    verified = verify_ledger(session.ledger, session.conn)
    return VerifyReport(verified, time.perf_counter() - started)


def grant(
    session: Session, readers: Sequence[str], writers: Sequence[str], admins: Sequence[str]
) -> list[str]:
    """PostgreSQL: each role made a member of the schema's reader, writer or admin group; one
    line per membership granted."""
    store = session.store
    return roles.grant(store, readers, writers, admins, append_only.table_names(store))


def diagnose(session: Session) -> list[Finding]:
    """The events of the log its read models cannot apply, in log order. Reads the log only:
    not through the session's ledger, which would bring the read models up to date first (and
    fail on the very events asked about)."""
    from projections import doctor

    ledger = Ledger.open(session.store, conn=session.conn)
    try:
        return doctor.diagnose(ledger)
    finally:
        ledger.close()


def neutralize(
    session: Session, positions: Sequence[int], actor: str | None, reason: str | None
) -> list[Finding]:
    """Record that the events at `positions` are set aside (they stay in the log; history shows
    who, when and why). Every poisoned event must be named at once: the read models cannot get
    past one left."""
    from projections import doctor

    if not (reason or "").strip():
        raise InvalidValue("doctor --neutralize needs --reason: say why the events are set aside")
    ledger = session.ledger
    ledger.actor = actor or session.actor
    return doctor.neutralize(ledger, positions, reason or "")
