"""Fixtures: every behavioural test runs on a real SQLite file and a real PostgreSQL schema.

PostgreSQL comes from FAIRLEDGER_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test);
each test gets its own schema, dropped afterwards. Without a server the PostgreSQL cases are
skipped, unless FAIRLEDGER_REQUIRE_POSTGRES=1 (CI), where they fail instead.

The suite runs in parallel (pytest-xdist, `-n auto` in pyproject.toml; `-n 0` for one process):
every test has its own tmp_path and schema, and nothing else is shared. A `ledger_store` is a
copy of the ledger `create-db` made once per process (a file copy on SQLite, its schema dumped
by pg_dump and replayed under the test's name on PostgreSQL): the same events, tables, indexes
and triggers as running create-db again, for a fraction of the time.

Hypothesis: the default profile runs each property 100 times (the slow ones used to ask for
200-300); FAIRLEDGER_HYPOTHESIS_PROFILE=thorough runs each 1,000 times, for a change to the
calculations.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

from cli.main import cli

PG_URL = os.environ.get("FAIRLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
PG_BASE = PG_URL.split("?")[0]  # the server and database; each test adds its ?schema=
REQUIRE_PG = os.environ.get("FAIRLEDGER_REQUIRE_POSTGRES") == "1"
DATA = Path(__file__).parent / "data"
T0 = 1_700_000_000  # a fixed ledger time keeps outputs (creation_time, ...) reproducible

settings.register_profile("thorough", max_examples=1000)
settings.load_profile(os.environ.get("FAIRLEDGER_HYPOTHESIS_PROFILE", "default"))


_REACHED: list[bool] = []  # a server this process reached once is taken to be there


def _pg_reachable() -> str | None:
    if _REACHED:
        return None
    try:
        import psycopg

        with psycopg.connect(PG_BASE, connect_timeout=3):
            _REACHED.append(True)
            return None
    except Exception as err:  # any failure to connect means "no server here"
        return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest tests (`@pytest.mark.slow`) first: in parallel the other worker takes the
    rest meanwhile, instead of one core waiting on a long test at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@dataclass
class Store:
    kind: str
    url: str

    def run(
        self,
        *args: str,
        now: float | None = T0,
        input: str | bytes | None = None,
        expect: int | None = 0,
    ) -> Result:
        """Run `fairledger --db URL [--now T] ARGS...` in-process and check its exit code."""
        head = ["--db", self.url] + (["--now", str(now)] if now is not None else [])
        result = CliRunner().invoke(cli, head + list(args), input=input, prog_name="fairledger")
        if expect is not None and result.exit_code != expect:
            raise AssertionError(
                f"fairledger {' '.join(args)} exited {result.exit_code}, expected {expect}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
            )
        return result

    def log_position(self) -> int:
        from ledger.store.application import Ledger
        from ledger.store.connections import parse_store_url

        ledger = Ledger(parse_store_url(self.url))
        try:
            return ledger.recorder.max_notification_id() or 0
        finally:
            ledger.close()

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Every read-model table's rows, sorted, for comparisons."""
        from ledger.store.connections import Connection, parse_store_url
        from projections.writers.schema import TABLES

        conn = Connection(parse_store_url(self.url))
        try:
            out = {}
            for name in TABLES:
                if name == "projection_tracking":
                    continue
                rows = conn.query(f"SELECT * FROM {name}")
                out[name] = sorted(rows, key=lambda r: repr(sorted(r.items())))
            return out
        finally:
            conn.close()


def _verified(store: Store, request: pytest.FixtureRequest) -> None:
    """Every ledger a test leaves behind passes `fairledger verify` (the hash chain, and read
    models equal to a rebuild), unless the test broke it on purpose (`@pytest.mark.tampered`)."""
    if request.node.get_closest_marker("tampered") is not None:
        return
    result = store.run("verify", now=None, expect=None)
    if result.exit_code == 1 and "no ledger at " in result.stderr.splitlines()[0]:
        return  # the test made none (verify creates nothing to say so)
    if result.exit_code != 0:
        pytest.fail(f"fairledger verify failed on the ledger this test left:\n{result.stderr}")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        built = Store("sqlite", f"sqlite:///{tmp_path / 'ledger.db'}")
        yield built
        _verified(built, request)
        return
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {problem}")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    built = Store("postgres", f"{PG_BASE}?schema={schema}")
    try:
        yield built
        _verified(built, request)
    finally:
        _drop_schema(schema)


_ADMIN: list[Any] = []  # this process's connection for cloning and dropping schemas, made once


def _admin() -> Any:
    import psycopg

    if not _ADMIN or _ADMIN[0].closed:
        _ADMIN[:] = [psycopg.connect(PG_BASE, autocommit=True)]
    return _ADMIN[0]


def _drop_schema(schema: str) -> None:
    _admin().execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file `create-db` makes, made once per process: a ledger_store is a copy of it."""
    made = Store("sqlite", f"sqlite:///{tmp_path_factory.mktemp('template') / 'ledger.db'}")
    made.run("create-db")
    return Path(made.url.removeprefix("sqlite:///"))


@pytest.fixture(scope="session")
def _postgres_template() -> tuple[str, str] | None:
    """The schema `create-db` makes, made once per process and dumped (pg_dump) as SQL that
    builds it again under another name in one round trip: half create-db's time, most of it
    the server's. Returns the template's schema name and that SQL; None without a pg_dump
    that can dump this server (create-db then runs for each test, as it did)."""
    pg_dump = shutil.which("pg_dump")
    if pg_dump is None:
        return None
    # A name that appears nowhere else in the dump, so that replacing it renames the copy.
    schema = f"fltpl_{uuid.uuid4().hex}"
    Store("postgres", f"{PG_BASE}?schema={schema}").run("create-db")
    try:
        dumped = subprocess.run(
            [pg_dump, "--dbname", PG_BASE, "--schema", schema, "--inserts", "--no-owner"],
            capture_output=True,
            text=True,
        )
    finally:
        _drop_schema(schema)
    if dumped.returncode != 0:
        return None
    # psql meta-commands (\restrict in recent dumps) are not SQL; everything else is.
    sql = "\n".join(line for line in dumped.stdout.splitlines() if not line.startswith("\\"))
    return schema, sql


@pytest.fixture
def ledger_store(store: Store, request: pytest.FixtureRequest) -> Store:
    """A store holding what `fairledger create-db` (at T0) makes: a copy of one made for this
    process, which is what create-db would make again (its events, their hashes, the read
    models and, on PostgreSQL, every table, index, trigger and function). The tests of
    create-db itself use `store`."""
    if store.kind == "sqlite":
        shutil.copy2(request.getfixturevalue("_sqlite_template"), store.url[len("sqlite:///") :])
        return store
    template = request.getfixturevalue("_postgres_template")
    if template is None:
        store.run("create-db")
        return store
    name, sql = template
    admin = _admin()
    with admin.transaction():
        admin.execute(sql.replace(name, store.url.rsplit("?schema=", 1)[1]).encode())
    return store
