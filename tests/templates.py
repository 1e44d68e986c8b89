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
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from tests.conftest import Store

T = TypeVar("T")
SQLITE = "sqlite:///"
SCHEMA = "?schema="

# (store kind, build, its arguments) -> (the template's copy, what the build returned)
_TEMPLATES: dict[tuple[Hashable, ...], tuple[Path | tuple[str, str] | None, Any]] = {}
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
    _admin(base).execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _admin(base: str) -> Any:
    import psycopg

    if not _ADMIN or _ADMIN[0].closed:
        _ADMIN[:] = [psycopg.connect(base, autocommit=True)]
    return _ADMIN[0]


def _template_url(store: Store) -> str:
    if store.kind == "sqlite":
        if not _WORKDIR:
            _WORKDIR.append(Path(tempfile.mkdtemp(prefix="fairledger-templates-")))
            atexit.register(shutil.rmtree, _WORKDIR[0], True)
        return f"{SQLITE}{_WORKDIR[0] / uuid.uuid4().hex}.db"
    # A name that appears nowhere else in a dump, so that replacing it renames the copy.
    return f"{store.url.split('?')[0]}{SCHEMA}fltpl_{uuid.uuid4().hex}"


def _snapshot(template: Store) -> Path | tuple[str, str] | None:
    """SQLite: the template's file, kept. PostgreSQL: its schema as SQL (pg_dump), and the
    schema dropped; None without a pg_dump that can dump this server."""
    if template.kind == "sqlite":
        return Path(template.url.removeprefix(SQLITE))
    base, schema = template.url.split(SCHEMA)
    pg_dump = shutil.which("pg_dump")
    try:
        if pg_dump is None:
            return None
        dumped = subprocess.run(
            [pg_dump, "--dbname", base, "--schema", schema, "--inserts", "--no-owner"],
            capture_output=True,
            text=True,
        )
    finally:
        drop_schema(base, schema)
    if dumped.returncode != 0:
        return None
    # psql meta-commands (\restrict in recent dumps) are not SQL; everything else is.
    sql = "\n".join(line for line in dumped.stdout.splitlines() if not line.startswith("\\"))
    return schema, sql


def _is_empty(store: Store) -> bool:
    if store.kind == "sqlite":
        return not os.path.exists(store.url.removeprefix(SQLITE))
    base, schema = store.url.split(SCHEMA)
    found = _admin(base).execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
    return found.fetchone() is None


def _restore(source: Path | tuple[str, str], store: Store) -> None:
    if isinstance(source, Path):
        path = Path(store.url.removeprefix(SQLITE))
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, path)  # with its mode: create-db makes the file 0600
        wal = source.with_name(source.name + "-wal")  # a log its last command left unmerged
        if wal.exists():
            shutil.copy2(wal, path.with_name(path.name + "-wal"))
        return
    name, sql = source
    base, schema = store.url.split(SCHEMA)
    admin = _admin(base)
    with admin.transaction():
        admin.execute(sql.replace(name, schema).encode())
