"""The site projection: bank, association, queue, project, factor and config tables.

It folds Site events with the same reducers the aggregate uses, onto the state as it stood just
before the first new event (loaded from the aggregate's snapshot), and rewrites only the rows the
events touched. Usage and fair-share columns belong to the usage projection and are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ledger.flux_accounting import columns as flux_columns
from ledger.reducers import Touched, fold
from ledger.state import Association, Bank, SiteState
from ledger.store.connections import Connection
from projections.writers.schema import ASSOCIATION_QOS_COLUMNS


def bank_row(bank: Bank) -> tuple[Any, ...]:
    return (
        bank.bank_id,
        bank.bank,
        int(bank.active),
        bank.parent_bank,
        bank.shares,
        bank.priority,
        int(bank.ignore_older_than),
    )


def association_row(state: SiteState, a: Association) -> tuple[Any, ...]:
    return (
        int(a.creation_time),
        int(a.mod_time),
        int(a.active),
        a.username,
        a.userid,
        a.bank,
        state.default_banks.get(a.username, a.bank),
        a.shares,
        a.max_running_jobs,
        a.max_active_jobs,
        a.max_nodes,
        a.max_cores,
        a.queues,
        a.projects,
        a.default_project,
        a.max_sched_jobs,
        a.ignore_older_than,
        a.qos,
        a.default_qos,
    )


_UPSERT_BANK = """
    INSERT INTO bank_table (bank_id, bank, active, parent_bank, shares, priority,
                            ignore_older_than)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (bank) DO UPDATE SET bank_id = excluded.bank_id, active = excluded.active,
        parent_bank = excluded.parent_bank, shares = excluded.shares,
        priority = excluded.priority, ignore_older_than = excluded.ignore_older_than"""

# The association's usage columns, written by the usage projection (usage_tables), not here.
USAGE_COLUMNS = ("job_usage", "fairshare")
# The columns association_row fills, in its order: flux-accounting's less the usage columns,
# then the ones beyond its table.
ASSOCIATION_COLUMNS = (
    *(c for c in flux_columns.ASSOCIATION_COLUMNS if c not in USAGE_COLUMNS),
    "ignore_older_than",
    *ASSOCIATION_QOS_COLUMNS,
)
_ASSOCIATION_KEY = ("username", "bank")

_UPSERT_ASSOCIATION = (
    f"INSERT INTO association_table ({', '.join(ASSOCIATION_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(ASSOCIATION_COLUMNS))}) "
    f"ON CONFLICT ({', '.join(_ASSOCIATION_KEY)}) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in ASSOCIATION_COLUMNS if c not in _ASSOCIATION_KEY)
)


def associations_in_order(state: SiteState, users: Iterable[str]) -> Iterator[Association]:
    """The associations of `users`, in the order association_table's rows are written: by
    user name, then as the state holds each user's."""
    for username in sorted(users):
        yield from state.associations.get(username, {}).values()


def write_touched(conn: Connection, state: SiteState, touched: Touched) -> None:
    """Make the tables' rows for the touched keys equal the state's."""
    for name in sorted(touched.banks):
        bank = state.banks.get(name)
        if bank is None:
            conn.execute("DELETE FROM bank_table WHERE bank = ?", (name,))
        else:
            conn.execute(_UPSERT_BANK, bank_row(bank))
    # Set-wise, not per user: a rebuild or an as-of copy touches every user at once.
    users = sorted(touched.users)
    existing: set[tuple[str, str]] = set()
    for start in range(0, len(users), 500):
        chunk = users[start : start + 500]
        rows = conn.query(
            "SELECT username, bank FROM association_table "
            f"WHERE username IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        existing.update((r["username"], r["bank"]) for r in rows)
    conn.executemany(
        "DELETE FROM association_table WHERE username = ? AND bank = ?",
        sorted(key for key in existing if key[1] not in state.associations.get(key[0], {})),
    )
    conn.executemany(
        _UPSERT_ASSOCIATION,
        [association_row(state, a) for a in associations_in_order(state, users)],
    )
    for name in sorted(touched.queues):
        conn.execute("DELETE FROM queue_table WHERE queue = ?", (name,))
        queue = state.queues.get(name)
        if queue is not None:
            values = list(vars(queue).values())
            conn.execute(f"INSERT INTO queue_table VALUES ({', '.join('?' * len(values))})", values)
    for name in sorted(touched.qos):
        conn.execute("DELETE FROM qos_table WHERE qos = ?", (name,))
        qos = state.qos.get(name)
        if qos is not None:
            conn.execute(
                "INSERT INTO qos_table (qos, priority, usage_factor, flags, description) "
                "VALUES (?, ?, ?, ?, ?)",
                (qos.qos, qos.priority, qos.usage_factor, qos.flags, qos.description),
            )
    for name in sorted(touched.projects):
        conn.execute("DELETE FROM project_table WHERE project = ?", (name,))
        project = state.projects.get(name)
        if project is not None:
            conn.execute(
                "INSERT INTO project_table (project_id, project) VALUES (?, ?)",
                (project.project_id, project.project),
            )
    if touched.factors:
        conn.execute("DELETE FROM priority_factor_weight_table")
        conn.executemany(
            "INSERT INTO priority_factor_weight_table VALUES (?, ?)", list(state.factors.items())
        )
    if touched.config:
        conn.execute("DELETE FROM config_table")
        conn.executemany("INSERT INTO config_table VALUES (?, ?)", list(state.config.items()))


def fold_all(state: SiteState, events: list[Any]) -> Touched:
    touched = Touched()
    for event in events:
        touched.update(fold(state, event))
    return touched
