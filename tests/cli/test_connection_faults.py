"""A PostgreSQL server that refuses, never answers, or goes away mid-command: one line on stderr,
exit 1, well within the connect timeout, no traceback, nothing half-written."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from ledger.errors import LedgerError
from ledger.store.application import Ledger
from ledger.store.connections import parse_store_url
from tests.conftest import PG_URL, REQUIRE_PG, T0, Store, _pg_reachable

BOUND = 15.0  # seconds: the default connect timeout (10 s) and some slack
JOB = json.dumps(
    {"id": 1, "username": "alice", "bank": "A", "t_run": T0, "t_inactive": T0 + 60, "nnodes": 1}
)
COMMANDS = {
    "read": ("list-users",),
    "change": ("add-bank", "root", "1"),
    "ingest": ("ingest", "-"),
    "create": ("create-db",),
}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and never says a word (a hung server, a black-holing firewall)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join()
    for sock in held:
        sock.close()
    listener.close()


def run(url: str, *args: str, env: dict[str, str] | None = None) -> tuple[Result, float]:
    started = time.monotonic()
    result = CliRunner().invoke(
        cli, ["--db", url, "--now", str(T0), *args], input=JOB + "\n", env=env
    )
    return result, time.monotonic() - started


@dataclass(frozen=True)
class Ran:
    """A command run in a process of its own: what `fairledger` printed and how long it took."""

    kind: str
    exit_code: int
    stdout: str
    stderr: str
    seconds: float


def run_each_kind(url: str, env: dict[str, str] | None = None) -> list[Ran]:
    """Every kind of command against `url` at once, each in its own `fairledger` process: the
    waits these tests are about (a refusal's retries, a connect timeout) overlap."""
    started = time.monotonic()
    procs = {
        kind: subprocess.Popen(
            [sys.executable, "-m", "cli.main", "--db", url, "--now", str(T0), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            text=True,
        )
        for kind, args in sorted(COMMANDS.items())
    }
    ran = []
    for kind, proc in procs.items():
        out, err = proc.communicate(JOB + "\n")
        ran.append(Ran(kind, proc.returncode, out, err, time.monotonic() - started))
    return ran


def assert_one_line(result: Result | Ran, port: int) -> None:
    assert result.exit_code == 1, (result.stdout, result.stderr)
    if isinstance(result, Result):
        assert isinstance(result.exception, SystemExit)  # no traceback: a handled error
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(
        f"fairledger: cannot connect to postgresql://postgres@127.0.0.1:{port}/test?schema=s: "
    ), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_refused_connection_is_one_line_at_once() -> None:
    port = closed_port()
    for result in run_each_kind(f"postgresql://postgres@127.0.0.1:{port}/test?schema=s"):
        assert_one_line(result, port)
        assert "Connection refused" in result.stderr, result.kind
        assert result.seconds < BOUND, result.kind


def test_a_refused_connection_in_process_is_a_handled_error() -> None:
    """The same refusal through the command's own exit path (no exception escapes it)."""
    port = closed_port()
    result, _ = run(f"postgresql://postgres@127.0.0.1:{port}/test?schema=s", "list-users")
    assert_one_line(result, port)


def test_a_server_that_never_answers_times_out(silent_server: int) -> None:
    url = f"postgresql://postgres@127.0.0.1:{silent_server}/test?schema=s"
    for result in run_each_kind(url, env={"FAIRLEDGER_CONNECT_TIMEOUT": "2"}):
        assert_one_line(result, silent_server)
        assert "timeout" in result.stderr, result.kind
        # every kind waited out its own 2 s, at once (start-up included)
        assert 1.5 < result.seconds < 6, result.kind


def test_the_connect_timeout_must_be_seconds() -> None:
    result, _ = run(
        "postgresql://postgres@127.0.0.1:1/test",
        "list-users",
        env={"FAIRLEDGER_CONNECT_TIMEOUT": "soon"},
    )
    assert result.exit_code == 1
    assert result.stderr == (
        "fairledger: invalid FAIRLEDGER_CONNECT_TIMEOUT: 'soon' (seconds, 0 < T < 3600)\n"
    )


class Proxy:
    """A TCP relay to the test server that can be cut, to lose the connection mid-command."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = int(self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = []
        self.cutting = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client = self.listener.accept()[0]
            except OSError:
                return
            if self.cutting:
                client.close()
                return
            server = socket.create_connection(self.target)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.cutting = True
        with contextlib.suppress(OSError):  # wakes the accept() (close alone would not)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@pytest.fixture
def pg_store() -> Iterator[Store]:
    problem = _pg_reachable()
    if problem is not None:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {problem}")
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = Store("postgres", f"{PG_URL.split('?')[0]}?schema={schema}")
    store.run("create-db")
    store.run("add-bank", "root", "1")
    yield store
    with psycopg.connect(PG_URL.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_connection_lost_mid_command_fails_in_time_and_writes_nothing(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIRLEDGER_CONNECT_TIMEOUT", "3")
    real = parse_store_url(pg_store.url)
    proxy = Proxy((real.host, real.port))
    via = parse_store_url(
        f"postgresql://{real.user}@127.0.0.1:{proxy.port}/{real.dbname}?schema={real.schema}"
    )
    ledger = Ledger.open(via, now=T0 + 10)
    before = pg_store.log_position()
    try:
        ledger.state()  # the library's pool now holds live connections through the proxy
        proxy.cut()
        started = time.monotonic()
        with pytest.raises(Exception) as caught:
            ledger.execute(lambda s, st: s.add_bank(st, "A", 1, "root", None))
        seconds = time.monotonic() - started
    finally:
        ledger.close()
    # The CLI prints these as one line: a LedgerError, or a database error it catches.
    from cli.main import _infrastructure_errors

    assert isinstance(caught.value, (LedgerError, *_infrastructure_errors()))
    assert seconds < 3 + 3  # the bounded waits, not the library's four minutes
    assert pg_store.log_position() == before


BASE = PG_URL.split("?")[0]
BAD_SCHEMAS = {
    "?schema=information_schema": "invalid schema name: 'information_schema' (reserved by "
    "PostgreSQL)",
    "?schema=pg_catalog": "invalid schema name: 'pg_catalog' (reserved by PostgreSQL)",
    "?schema=pg_mine": "invalid schema name: 'pg_mine' (reserved by PostgreSQL)",
    "?schema=Acct_zq9": "invalid schema name: 'Acct_zq9' (lowercase letters, digits and _, "
    "at most 63)",
    "?schema=a-b": "invalid schema name: 'a-b' (lowercase letters, digits and _, at most 63)",
    "?schema=" + "a" * 64: f"invalid schema name: '{'a' * 64}' (lowercase letters, digits and _, "
    "at most 63)",
    "?schema=": "invalid schema name: '' (?schema= needs a name)",
    "?shema=x": "unknown parameter in --db URL: 'shema' (only ?schema=NAME)",
    "?schema=x&sslmode=require": "unknown parameter in --db URL: 'sslmode' (only ?schema=NAME)",
    "?schema=x&schema=y": "--db URL names the schema 2 times: ['x', 'y']",
    "?schema": "invalid parameter in --db URL: 'schema' (use ?schema=NAME)",
}


@pytest.mark.parametrize("query", sorted(BAD_SCHEMAS))
@pytest.mark.parametrize("command", ["create-db", "list-users"])
def test_a_schema_it_cannot_use_is_refused_before_anything_is_written(
    query: str, command: str
) -> None:
    problem = _pg_reachable()
    if problem is not None and REQUIRE_PG:
        pytest.fail(f"PostgreSQL required but unreachable at {PG_URL}: {problem}")
    result, _ = run(BASE + query, command)
    assert result.exit_code == 1
    assert result.stderr == f"fairledger: {BAD_SCHEMAS[query]}\n"
    assert result.stdout == ""
    if problem is None:
        import psycopg

        with psycopg.connect(BASE) as conn:
            rows = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE lower(nspname) = 'acct_zq9'"
            ).fetchall()
        assert rows == []


def test_an_explicit_public_schema_is_still_the_default() -> None:
    assert parse_store_url(BASE).schema == "public"
    assert parse_store_url(BASE + "?schema=public").schema == "public"
    assert parse_store_url(BASE + "?").schema == "public"
