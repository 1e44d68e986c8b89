"""Who may do what on PostgreSQL, and who is recorded as having done it.

Three group roles per schema, created by `fairledger grant`: `fairledger_<schema>_reader`
(SELECT on the log and the read models), `_writer` (a reader that may also append to the log and
fold the read models: the cron's ingest, update-usage and update-fshare) and `_admin` (a writer
that may also change the site: banks, users, queues, projects, factors, config). The database
enforces the first two with privileges and the append-only triggers; the application refuses a
site change from a role that is not an admin (nor the schema's owner, nor a superuser).

On PostgreSQL the actor of an event is the database session's role, which the server
authenticated; a `--actor` is kept as the event's `source["on_behalf_of"]`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ledger import events as ev
from ledger.errors import InvalidValue, LedgerMissing, PermissionDenied
from ledger.site import ON_BEHALF_OF
from ledger.store.connections import (
    Connection,
    StoreConfig,
    event_table_exists,
    postgres_admin_connect,
)

GROUPS = ("reader", "writer", "admin")
# What a writer's cron records through Ledger.execute; every other site event is an admin's.
WRITER_EVENTS = (ev.UsageUpdated, ev.FairshareUpdated)
_ROLE_NAME_LIMIT = 63  # NAMEDATALEN - 1
_GRANT_LOCK = 7262003


def group_role(schema: str, group: str) -> str:
    return f"fairledger_{schema}_{group}"


# --- who is recorded -----------------------------------------------------------------------------
_SESSION_ROLES: dict[StoreConfig, str] = {}


def session_role(config: StoreConfig, conn: Connection | None = None) -> str:
    """The role the server authenticated for this URL (a login's name cannot change), asked
    once per process, through `conn` when given."""
    role = _SESSION_ROLES.get(config)
    if role is None:
        if conn is not None:
            role = str(conn.raw.execute("SELECT session_user").fetchone()[0])
        else:
            with postgres_admin_connect(config) as raw:
                role = str(raw.execute("SELECT session_user").fetchone()[0])
        _SESSION_ROLES[config] = role
    return role


def attribution(
    config: StoreConfig, actor: str, source: dict[str, Any], conn: Connection | None = None
) -> tuple[str, dict[str, Any]]:
    """The actor and source to record: on PostgreSQL the session's role, with the given actor
    (if any, and another name) as who it acted for; on SQLite the given actor."""
    if not config.is_postgres:
        return actor, source
    role = session_role(config, conn)
    if actor and actor != role:
        return role, {**source, ON_BEHALF_OF: actor}
    return role, source


# --- who may change the site ---------------------------------------------------------------------
_MAY_ADMINISTER = """
SELECT session_user AS role,
       r.rolsuper
       OR pg_has_role(current_user, n.nspowner, 'MEMBER')
       OR COALESCE(pg_has_role(current_user, g.oid, 'MEMBER'), false) AS may
FROM pg_roles r
CROSS JOIN pg_namespace n
LEFT JOIN pg_roles g ON g.rolname = %s
WHERE r.rolname = current_user AND n.nspname = %s
"""


def check_may_record(config: StoreConfig, events: Iterable[Any], conn: Connection) -> None:
    """Refuse a site change from a role that is not an admin of the ledger's schema (asked
    through `conn`, in the write's own transaction)."""
    if not config.is_postgres or all(isinstance(e, WRITER_EVENTS) for e in events):
        return
    admin = group_role(config.schema, "admin")
    row = conn.raw.execute(_MAY_ADMINISTER, (admin, config.schema)).fetchone()
    if row is None or not row[1]:
        role = row[0] if row else config.user
        raise PermissionDenied(
            f"role {role!r} may not change the site of schema {config.schema!r}: that needs "
            f"{admin} (fairledger grant --admin {role})"
        )


# --- grant ---------------------------------------------------------------------------------------
def grant(
    config: StoreConfig,
    readers: Iterable[str],
    writers: Iterable[str],
    admins: Iterable[str],
    append_only: list[str],
) -> list[str]:
    """Create the schema's group roles if missing, give them their privileges on every table
    there now (and on tables the owner creates later, e.g. by a rebuild), and make each role a
    member of its group. Returns one line per membership granted."""
    if not config.is_postgres:
        raise InvalidValue(
            "grant works on PostgreSQL only; a SQLite ledger is guarded by its file's "
            "permissions (create-db --group-readable)"
        )
    wanted = [("reader", r) for r in readers] + [("writer", w) for w in writers]
    wanted += [("admin", a) for a in admins]
    if not wanted:
        raise InvalidValue("grant needs at least one --reader, --writer or --admin ROLE")
    longest = group_role(config.schema, "reader")
    if len(longest) > _ROLE_NAME_LIMIT:
        raise InvalidValue(f"schema name too long for its group roles: {config.schema!r}")
    from psycopg import sql  # here: a SQLite ledger's commands never load psycopg

    if not event_table_exists(config):
        raise LedgerMissing(config.missing_ledger())
    with postgres_admin_connect(config) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_GRANT_LOCK,))
        for _group, role in wanted:
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                raise InvalidValue(f"no such role: {role!r} (create it first: CREATE ROLE)")
        _create_groups(conn, config.schema)
        _grant_privileges(conn, config.schema, append_only)
        for group, role in wanted:
            conn.execute(
                sql.SQL("GRANT {} TO {}").format(
                    sql.Identifier(group_role(config.schema, group)), sql.Identifier(role)
                )
            )
    return [f"{role}: {group_role(config.schema, group)}" for group, role in wanted]


def _create_groups(conn: Any, schema: str) -> None:
    for group in GROUPS:
        name = group_role(schema, group)
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
            conn.execute(f'CREATE ROLE "{name}" NOLOGIN')
    reader, writer, admin = (f'"{group_role(schema, g)}"' for g in GROUPS)
    conn.execute(f"GRANT {reader} TO {writer}")
    conn.execute(f"GRANT {writer} TO {admin}")


def _grant_privileges(conn: Any, schema: str, append_only: list[str]) -> None:
    reader, writer, _admin = (f'"{group_role(schema, g)}"' for g in GROUPS)
    quoted = f'"{schema}"'
    owner = conn.execute(
        "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s", (schema,)
    ).fetchone()[0]
    conn.execute(f"GRANT USAGE ON SCHEMA {quoted} TO {reader}")
    conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {quoted} TO {reader}")
    conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {quoted} TO {writer}")
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    ]
    for table in tables:
        target = f'{quoted}."{table}"'
        if table in append_only:
            conn.execute(f"GRANT SELECT, INSERT ON {target} TO {writer}")
            conn.execute(f"REVOKE UPDATE, DELETE, TRUNCATE ON {target} FROM {writer}, {reader}")
        else:  # a read model: folded in the writer's transaction
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {target} TO {writer}")
    # Read models the owner recreates (rebuild, a new layout) keep their grants.
    defaults = f'ALTER DEFAULT PRIVILEGES FOR ROLE "{owner}" IN SCHEMA {quoted}'
    conn.execute(f"{defaults} GRANT SELECT ON TABLES TO {reader}")
    conn.execute(f"{defaults} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {writer}")
    conn.execute(f"{defaults} GRANT USAGE ON SEQUENCES TO {writer}")
