"""Ledgers built once per test process and copied into each test's store.

Many tests start from the same ledger (what `create-db` makes, a site of banks and users): the
CLI commands that make it run once per process and store kind, into a template, and each test
gets a copy of the result. A copy of SQLite is its file; of PostgreSQL its schema, dumped by
pg_dump and replayed under the test's schema name in one round trip. Either way the test's
store holds exactly what running the commands again would leave (the same events, hashes,
read models, tables, indexes and triggers), and the end-of-test verify checks it as before.

A build must depend only on its arguments: fixed --now values, nothing read from the test's
files or environment. Without a pg_dump that can dump the server, PostgreSQL stores run the
build each time, as they did before templates.

A PostgreSQL copy is mostly DDL: replaying a template and dropping the copy afterwards cost
about 70 ms a test, a fifth of the PostgreSQL cases' time. So a copy whose test ran no DDL in it
is not dropped but emptied and refilled from the template's own schema, kept for the process
(DELETE, then INSERT ... SELECT: the same rows in the same order, the sequences set to the
template's), and kept under a spare name for the next test of that template, which renames it.
What the copy's next test reads is what a replayed copy holds. What differs is where PostgreSQL
keeps the rows on disk, on which no query may rely without an ORDER BY, and the rows deleted
that autovacuum may come to VACUUM during a later test (so a test does not read the planner's
statistics to learn whether a command ran ANALYZE: test_ingest_bulk reads the count of them).
Whether a test ran DDL in its schema is what event triggers record (`_install_watch`): every DDL
command but the fixtures' own, by schema, and a command that names no schema (GRANT) as one in
every schema. Without the rights to install them (not a superuser), copies are dropped as before.
"""

from __future__ import annotations

import atexit
import copy
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from tests.conftest import Store

T = TypeVar("T")
SQLITE = "sqlite:///"
SCHEMA = "?schema="

# (store kind, build, its arguments) -> (the template's copy, what the build returned)
_TEMPLATES: dict[tuple[Hashable, ...], tuple[Path | PgTemplate | None, Any]] = {}
_ADMIN: list[Any] = []  # this process's connection for cloning and dropping schemas, made once
_WORKDIR: list[Path] = []  # where this process keeps its SQLite templates


def built(store: Store, build: Callable[..., T], *args: Hashable) -> T:
    """What `build(store, *args)` makes in the empty `store`, and what it returned: the first
    call per process and store kind runs it into a template, later ones copy that template.
    A store that is not empty gets the build itself."""
    key = (store.kind, build.__module__, build.__qualname__, *args)
    if key not in _TEMPLATES:
        template = type(store)(store.kind, _template_url(store))
        value = build(template, *args)
        _TEMPLATES[key] = (_snapshot(template), value)
    source, value = _TEMPLATES[key]
    if source is None or not _is_empty(store):
        return build(store, *args)
    _restore(source, store)
    return copy.deepcopy(value)  # a test may change what it got; the next one gets the original


def drop_schema(base: str, schema: str) -> None:
    """The test's schema gone: kept for the next copy of its template when the test ran no DDL
    in it, else dropped."""
    copied = _COPIES.pop(schema, None)
    if copied is not None and _keep(base, schema, copied):
        return
    _admin(base).execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _admin(base: str) -> Any:
    import psycopg

    if not _ADMIN or _ADMIN[0].closed:
        conn = psycopg.connect(base, autocommit=True)
        # The fixtures' own DDL (copies, renames, drops) is not a test's: the triggers skip it.
        conn.execute(f"SET {_FIXTURES_SETTING} = 'on'")
        _ADMIN[:] = [conn]
        _WATCHING[:] = [_install_watch(conn)]
    return _ADMIN[0]


def _template_url(store: Store) -> str:
    if store.kind == "sqlite":
        if not _WORKDIR:
            _WORKDIR.append(Path(tempfile.mkdtemp(prefix="fairledger-templates-")))
            atexit.register(shutil.rmtree, _WORKDIR[0], True)
        return f"{SQLITE}{_WORKDIR[0] / uuid.uuid4().hex}.db"
    # A name that appears nowhere else in a dump, so that replacing it renames the copy.
    return f"{store.url.split('?')[0]}{SCHEMA}fltpl_{uuid.uuid4().hex}"


@dataclass
class PgTemplate:
    """A PostgreSQL template: its schema (kept until the process ends, the source a kept copy is
    refilled from), that schema as SQL, and the copies free for the next test."""

    schema: str
    sql: str
    refill: str = ""  # the statements that empty a copy and refill it; made at first use
    relations: list[tuple[str, str]] = field(default_factory=list)  # (relname, relkind); ditto
    spare: list[tuple[str, str]] = field(default_factory=list)  # (name, _STATISTICS of it)


@dataclass
class _Copy:
    """A test's schema copied from a template."""

    template: PgTemplate
    mark: int  # the DDL log's last entry when it was made: one after it means DDL ran in it
    statistics: str  # its _STATISTICS then


def _snapshot(template: Store) -> Path | PgTemplate | None:
    """SQLite: the template's file, kept. PostgreSQL: its schema as SQL (pg_dump), the schema
    kept while copies of it are (else dropped); None without a pg_dump that can dump this
    server."""
    if template.kind == "sqlite":
        return Path(template.url.removeprefix(SQLITE))
    base, schema = template.url.split(SCHEMA)
    pg_dump = shutil.which("pg_dump")
    dumped = None
    if pg_dump is not None:
        dumped = subprocess.run(
            [pg_dump, "--dbname", base, "--schema", schema, "--inserts", "--no-owner"],
            capture_output=True,
            text=True,
        )
    if dumped is None or dumped.returncode != 0 or not _watching(base):
        _admin(base).execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    if dumped is None or dumped.returncode != 0:
        return None
    # psql meta-commands (\restrict in recent dumps) are not SQL; everything else is.
    sql = "\n".join(line for line in dumped.stdout.splitlines() if not line.startswith("\\"))
    made = PgTemplate(schema, sql)
    if _watching(base):
        _KEPT_SCHEMAS.append(made)
    return made


def _is_empty(store: Store) -> bool:
    if store.kind == "sqlite":
        return not os.path.exists(store.url.removeprefix(SQLITE))
    base, schema = store.url.split(SCHEMA)
    found = _admin(base).execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
    return found.fetchone() is None


def _restore(source: Path | PgTemplate, store: Store) -> None:
    if isinstance(source, Path):
        path = Path(store.url.removeprefix(SQLITE))
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, path)  # with its mode: create-db makes the file 0600
        wal = source.with_name(source.name + "-wal")  # a log its last command left unmerged
        if wal.exists():
            shutil.copy2(wal, path.with_name(path.name + "-wal"))
        return
    base, schema = store.url.split(SCHEMA)
    admin = _admin(base)
    statistics = None
    with admin.transaction():
        if source.spare:
            spare, statistics = source.spare.pop()
            admin.execute(f'ALTER SCHEMA "{spare}" RENAME TO "{schema}"')
        else:
            admin.execute(source.sql.replace(source.schema, schema).encode())
    if _watching(base):
        if statistics is None:
            statistics = _statistics(admin, schema, source)[0]
        _COPIES[schema] = _Copy(source, _ddl_mark(admin), statistics)


# --- kept copies --------------------------------------------------------------------------------

_FIXTURES_SETTING = "fairledger_tests.fixtures"
_DDL_LOG = "public.fairledger_tests_ddl"
_COPIES: dict[str, _Copy] = {}  # by schema name
_WATCHING: list[bool] = []  # whether this process could install the DDL triggers
_KEPT_SCHEMAS: list[PgTemplate] = []  # with their spare copies; dropped by drop_kept

# Security definer: a test's command may run as a role that cannot write the log. A command
# with no schema of its own (GRANT, ALTER DEFAULT PRIVILEGES) is logged as '*', every schema.
_WATCH_SQL = f"""
SELECT pg_advisory_xact_lock(hashtext('{_DDL_LOG}'));
CREATE UNLOGGED TABLE IF NOT EXISTS {_DDL_LOG} (
    id BIGSERIAL PRIMARY KEY, schema_name TEXT NOT NULL);
CREATE OR REPLACE FUNCTION {_DDL_LOG}_seen() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    IF current_setting('{_FIXTURES_SETTING}', true) = 'on' THEN RETURN; END IF;
    IF tg_event = 'sql_drop' THEN
        INSERT INTO {_DDL_LOG} (schema_name)
        SELECT DISTINCT coalesce(schema_name, CASE WHEN object_type = 'schema'
                                              THEN object_identity END, '*')
        FROM pg_event_trigger_dropped_objects();
    ELSE
        INSERT INTO {_DDL_LOG} (schema_name)
        SELECT DISTINCT coalesce(schema_name, CASE WHEN object_type = 'schema'
                                              THEN object_identity END, '*')
        FROM pg_event_trigger_ddl_commands();
    END IF;
END $$;
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'fairledger_tests_ddl_end')
    THEN CREATE EVENT TRIGGER fairledger_tests_ddl_end ON ddl_command_end
         EXECUTE FUNCTION {_DDL_LOG}_seen();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'fairledger_tests_ddl_drop')
    THEN CREATE EVENT TRIGGER fairledger_tests_ddl_drop ON sql_drop
         EXECUTE FUNCTION {_DDL_LOG}_seen();
    END IF;
END $$;
"""


def _install_watch(admin: Any) -> bool:
    """The DDL triggers in the test database (shared by the processes, removed by
    `finish_run` when they are all done); False without the rights to install them."""
    import psycopg

    try:
        with admin.transaction():
            admin.execute(_WATCH_SQL)
        return True
    except psycopg.errors.InsufficientPrivilege:
        return False


# Every run of the suite holds this lock, shared, on the test database from its start to its
# end: the run that ends last, and only it, takes it alone and removes what the runs share.
_RUN_LOCK = "fairledger_tests_run"


def start_run(base: str) -> Any:
    """This run's share of the test database (a connection holding the run lock, shared), or
    None without a server. Taken before any process of the run installs the DDL triggers; it
    waits while a run that ended last is removing them."""
    import psycopg

    try:
        conn = psycopg.connect(base, autocommit=True, connect_timeout=3)
    except psycopg.Error:
        return None
    conn.execute("SELECT pg_advisory_lock_shared(hashtext(%s))", (_RUN_LOCK,))
    return conn


def finish_run(base: str, share: Any) -> None:
    """The test run is over: if no other run of the suite holds a share of the database, the
    DDL triggers and their log removed, and the database vacuumed. The CI server runs with
    autovacuum off, so the catalogs would otherwise keep a dead row for every table, column
    and index of every schema the suite made and dropped (490,000 in pg_attribute after one
    run before copies were kept, 166,000 since), and every later run, CI's included, would scan
    them. Another run still going needs the triggers: it removes them when it ends."""
    import psycopg

    if share is None:
        return
    try:
        share.execute("SELECT pg_advisory_unlock_shared(hashtext(%s))", (_RUN_LOCK,))
        alone = share.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (_RUN_LOCK,))
        if not alone.fetchone()[0]:
            return
        share.execute(
            "DROP EVENT TRIGGER IF EXISTS fairledger_tests_ddl_end; "
            "DROP EVENT TRIGGER IF EXISTS fairledger_tests_ddl_drop; "
            f"DROP FUNCTION IF EXISTS {_DDL_LOG}_seen(); DROP TABLE IF EXISTS {_DDL_LOG}"
        )
        share.execute("VACUUM")
    except psycopg.errors.InsufficientPrivilege:
        pass
    finally:
        share.close()  # its locks with it


def _watching(base: str) -> bool:
    _admin(base)
    return _WATCHING[0]


def _ddl_mark(admin: Any) -> int:
    return int(admin.execute(f"SELECT coalesce(max(id), 0) FROM {_DDL_LOG}").fetchone()[0])


def _keep(base: str, schema: str, copied: _Copy) -> bool:
    """A copy in which its test ran no DDL, refilled with the template's rows and kept under a
    spare name; False (for a drop) when DDL ran in it, when its planner statistics changed (an
    ANALYZE or a VACUUM, by a command or by autovacuum), or when it holds more than KEPT_BYTES
    (the deleted rows stay on disk until a VACUUM)."""
    admin = _admin(base)
    template = copied.template
    ddl = admin.execute(_DDL_SINCE, (copied.mark, schema)).fetchone()[0]
    if ddl:
        return False
    now, size = _statistics(admin, schema, template)
    if now != copied.statistics or size > KEPT_BYTES:
        return False
    if not template.refill:
        template.refill = _refill_sql(admin, template)
    spare = f"flspare_{uuid.uuid4().hex}"
    with admin.transaction():
        admin.execute(template.refill.replace(_COPY, schema).encode())
        admin.execute(f'ALTER SCHEMA "{schema}" RENAME TO "{spare}"')
    template.spare.append((spare, copied.statistics))
    return True


_COPY = "@copy@"  # where the copy's name goes in a template's refill statements
KEPT_BYTES = 4 << 20
# DDL since the mark in the schema; or, as good as, the triggers gone (a run that does not take
# its share of the database, start_run, ended and removed them), so that DDL may have gone
# unrecorded.
_DDL_SINCE = f"""
SELECT EXISTS (SELECT 1 FROM {_DDL_LOG} WHERE id > %s AND schema_name IN (%s, '*'))
    OR (SELECT count(*) FROM pg_event_trigger WHERE evtname LIKE 'fairledger_tests_ddl_%%') < 2
"""


def _statistics(admin: Any, schema: str, template: PgTemplate) -> tuple[str, int]:
    """What the planner knows of each of the template's tables and indexes in `schema` (ANALYZE
    and VACUUM change it), and their bytes on disk. Looked up by name: with autovacuum off, as
    on the CI server, the catalogs grow with every schema made and dropped, and a scan of
    pg_class by schema alone took 28 ms."""
    found = admin.execute(
        "SELECT string_agg(relname || '=' || reltuples || '/' || relpages || '/' || "
        "(SELECT count(*) FROM pg_statistic WHERE starelid = c.oid), ',' ORDER BY relname), "
        "coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_class c "
        "WHERE relname = ANY(%s) AND relnamespace = "
        "(SELECT oid FROM pg_namespace WHERE nspname = %s)",
        ([name for name, _kind in _relations(admin, template)], schema),
    ).fetchone()
    return found[0], int(found[1])


def _relations(admin: Any, template: PgTemplate) -> list[tuple[str, str]]:
    """The template's tables, indexes, sequences and types (name, relkind), read once."""
    if not template.relations:
        template.relations = admin.execute(
            "SELECT relname, relkind FROM pg_class WHERE relnamespace = %s::regnamespace "
            "ORDER BY relname",
            (template.schema,),
        ).fetchall()
    return template.relations


def _refill_sql(admin: Any, template: PgTemplate) -> str:
    """Statements that make a copy of `template` hold its rows again: every table emptied and
    refilled in the template's order, every sequence set as the template's. As a replica, so
    that the append-only triggers, which refuse a DELETE, do not fire. DELETE, not TRUNCATE:
    TRUNCATE makes new files for every table and index, 57 ms against 1 ms here."""
    objects = _relations(admin, template)
    tables = [name for name, kind in objects if kind == "r"]
    sequences = [name for name, kind in objects if kind == "S"]
    statements = ["SET LOCAL session_replication_role = replica"]
    statements += [f'DELETE FROM "{_COPY}"."{t}"' for t in tables]
    statements += [
        f'INSERT INTO "{_COPY}"."{t}" OVERRIDING SYSTEM VALUE '
        f'SELECT * FROM "{template.schema}"."{t}"'
        for t in tables
    ]
    statements += [
        f'SELECT setval(\'"{_COPY}"."{s}"\', last_value, is_called) FROM "{template.schema}"."{s}"'
        for s in sequences
    ]
    return ";\n".join(statements)


@atexit.register
def drop_kept() -> None:
    """This process's templates and spare copies dropped: at the end of its test session,
    before the run's VACUUM (`finish_run`), and at exit if it never got there."""
    if not _ADMIN or _ADMIN[0].closed:
        return
    while _KEPT_SCHEMAS:
        template = _KEPT_SCHEMAS.pop()
        for schema in (template.schema, *(name for name, _ in template.spare)):
            try:
                _ADMIN[0].execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            except Exception:  # the server may be gone at exit; nothing else can be done
                return
        template.spare.clear()
