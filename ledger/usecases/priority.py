"""What the scheduler is told: a job's priority factor by factor, and the payloads (the plugin's
config and the priority-update RPCs) built from the site as the read models hold it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger import bounds
from ledger.clock import AsOf
from ledger.errors import InvalidValue, LedgerError, NotFound
from ledger.flux_accounting import payloads as flux_payloads
from ledger.priority import (
    URGENCY_DEFAULT,
    URGENCY_EXPEDITE,
    URGENCY_HOLD,
    PriorityWeights,
    job_priority,
    queue_factor,
)
from ledger.store.connections import Connection
from ledger.usecases.associations import Row, association_row, check_names
from ledger.usecases.session import Session
from projections.queries import site as queries


def _weights(conn: Connection) -> PriorityWeights:
    return PriorityWeights(**{r["factor"]: int(r["weight"]) for r in queries.factors(conn)})


@dataclass(frozen=True)
class PriorityAnswer:
    priority: int
    username: str
    bank: str  # the association's: the default bank when none was asked for
    queue: str | None
    urgency: int
    factors: list[Row]  # factor, value, weight, product


def priority_of(
    session: Session,
    username: str,
    bank: str | None = None,
    queue: str | None = None,
    urgency: int = URGENCY_DEFAULT,
    fairshare: float | None = None,
    as_of: AsOf | None = None,
    view: PriorityView | None = None,
) -> PriorityAnswer:
    """The integer priority a job of USERNAME would get now (or at `as_of`, or in `view`);
    `fairshare`, if given, replaces the one in force (a what-if)."""
    if not URGENCY_HOLD <= urgency <= URGENCY_EXPEDITE:
        raise InvalidValue(f"invalid urgency: {urgency} (must be 0..31)")
    if fairshare is not None:
        fairshare = bounds.check_float("--fairshare", fairshare, 0.0, 1.0)
    check_names(username=username, bank=bank, queue=queue)
    conn = view.conn if view is not None else session.read(as_of)
    assoc = association_row(conn, username, bank)
    queue_rows = queries.queues(conn)
    if queue is not None and queue not in {q["queue"] for q in queue_rows}:
        raise NotFound(f"queue {queue} not found in queue_table")
    queue_priorities = {q["queue"]: int(q["priority"]) for q in queue_rows}
    share = float(assoc["fairshare"]) if fairshare is None else fairshare
    result = job_priority(
        share,
        queue_factor(queue, queue_priorities),
        float(queries.bank(conn, assoc["bank"])["priority"]),
        urgency,
        _weights(conn),
    )
    return PriorityAnswer(
        priority=result.priority,
        username=username,
        bank=assoc["bank"],
        queue=queue,
        urgency=urgency,
        factors=[
            {"factor": f.name, "value": f.value, "weight": f.weight, "product": f.product}
            for f in result.factors
        ],
    )


@dataclass(frozen=True)
class PriorityView:
    """The site read once for pricing jobs: its read models now or at `--as-of`, that moment
    (jobs age until then) and whether it prices them as Slurm does (fair-tree or classic)."""

    conn: Connection
    at: float
    slurm: bool


def priority_view(session: Session, as_of: AsOf | None = None) -> PriorityView:
    conn = session.read(as_of)
    at = session.past(as_of, "--as-of") if as_of is not None else session.ledger.now().timestamp()
    return PriorityView(conn, at, queries.parent_shares(conn))


def current_payloads(session: Session, as_of: AsOf | None = None) -> dict[str, dict[str, Any]]:
    """The priority-update payloads (rec_update, rec_q_update, ...) of the site now, or as it
    stood at `as_of`."""
    conn = session.read(as_of)
    return flux_payloads.payloads(
        associations=queries.associations(conn),
        queues=queries.queues(conn),
        projects=queries.projects(conn),
        banks=queries.banks(conn, include_inactive=True),
        factors=queries.factors(conn),
        config={r["key"]: r["value"] for r in queries.configs(conn)},
    )


def plugin_config(session: Session, as_of: AsOf | None = None) -> dict[str, Any]:
    """The config Flux's mf_priority plugin loads, from the same payloads."""
    return flux_payloads.plugin_config(current_payloads(session, as_of))


def send_priority_update(session: Session) -> list[str]:
    """Send the payloads to a running Flux instance's mf_priority plugin, then reprioritize;
    the names of the payloads sent. No Flux here is one line, not a traceback."""
    from ledger.flux_accounting.transport import FluxUnavailable, connect
    from ledger.flux_accounting.transport import send_priority_update as send

    try:
        transport = connect()
    except FluxUnavailable as err:
        raise LedgerError(str(err)) from None
    return send(transport, current_payloads(session))
