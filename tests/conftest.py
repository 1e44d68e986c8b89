"""Fixtures: every behavioural test runs on a real SQLite file and a real PostgreSQL schema.

PostgreSQL comes from FAIRLEDGER_TEST_PG (default postgresql://postgres@127.0.0.1:5432/test);
each test gets its own schema, dropped afterwards. Without a server the PostgreSQL cases are
skipped, unless FAIRLEDGER_REQUIRE_POSTGRES=1 (CI), where they fail instead.

The suite runs in parallel (pytest-xdist, `-n auto` in pyproject.toml; `-n 0` for one process):
every test has its own tmp_path and schema, and nothing else is shared. A `ledger_store`, and
the sites tests build with `tests.templates.built`, are copies of a ledger made once per
process by the same CLI commands (tests/templates.py says how). A process keeps its PostgreSQL
sessions between the commands it runs, reset as new ones (tests/pg_sessions.py says why).

Hypothesis: the default profile runs each property 100 times (the slow ones used to ask for
200-300); FAIRLEDGER_HYPOTHESIS_PROFILE=thorough runs each 1,000 times, for a change to the
calculations.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

from cli.main import cli
from tests import pg_sessions
from tests.templates import built, drop_kept, drop_schema, finish_run, start_run

PG_URL = os.environ.get("FAIRLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
PG_BASE = PG_URL.split("?")[0]  # the server and database; each test adds its ?schema=
REQUIRE_PG = os.environ.get("FAIRLEDGER_REQUIRE_POSTGRES") == "1"
DATA = Path(__file__).parent / "data"
T0 = 1_700_000_000  # a fixed ledger time keeps outputs (creation_time, ...) reproducible

pg_sessions.install()  # PostgreSQL sessions kept between in-process commands (its docstring)

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


_RUN_SHARE: list[Any] = []  # the controller's share of the PostgreSQL test database


def pytest_sessionstart(session: pytest.Session) -> None:
    """The process that starts the others (the controller, or the only process) takes this
    run's share of the PostgreSQL test database, which other runs on it may share at once."""
    if not hasattr(session.config, "workerinput"):
        _RUN_SHARE.append(start_run(PG_BASE))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each process drops the schemas it kept (tests/templates.py), and the process that
    started them all, once they are done, cleans up what they shared, unless another run of
    the suite on the same database still needs it."""
    drop_kept()
    if not hasattr(session.config, "workerinput") and _RUN_SHARE:
        finish_run(PG_BASE, _RUN_SHARE.pop())


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


def refusal(command: str, message: str, kind: str = "ValueError") -> str:
    """The stderr of `command` refused with `message`, for a command flux-accounting has: its
    service's `<command>: <exception type>: ` after fairledger's own prefix, as its tests and
    its admins' scripts grep it (IntegrityError for a duplicate, else ValueError)."""
    return f"fairledger: {command}: {kind}: {message}\n"


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
        made = Store("sqlite", f"sqlite:///{tmp_path / 'ledger.db'}")
        yield made
        _verified(made, request)
        return
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {problem}")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    made = Store("postgres", f"{PG_BASE}?schema={schema}")
    try:
        yield made
        _verified(made, request)
    finally:
        _drop_schema(schema)


@pytest.fixture
def server() -> str:
    """The PostgreSQL server and database (no schema), for tests of the sessions themselves:
    skipped without one, failed in CI."""
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_BASE}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_BASE}: {problem}")
    return PG_BASE


def _drop_schema(schema: str) -> None:
    drop_schema(PG_BASE, schema)


def _create_db(store: Store) -> None:
    store.run("create-db")


def create_ledger(store: Store) -> None:
    """What `store.run("create-db")` (at T0) makes in the empty `store`: a copy of the ledger it
    made once in this process. The tests of create-db itself run it."""
    built(store, _create_db)


@pytest.fixture
def ledger_store(store: Store) -> Store:
    """A store holding what `fairledger create-db` (at T0) makes."""
    create_ledger(store)
    return store
