"""A bench's PostgreSQL ledgers live in schemas of their own in one database (--pg-url), made
for a run and dropped after it."""

from __future__ import annotations


def with_schema(base: str, schema: str) -> str:
    """The ledger URL of `schema` in the database `base` names."""
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def drop_schema(base: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(base.split("?")[0], autocommit=True) as conn:
        # A killed (hung) client's backend may still hold locks in the schema for a moment.
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND position(%s in query) > 0",
            (f'"{schema}"',),
        )
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
