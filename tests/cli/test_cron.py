"""`fairledger cron`: one process doing what `ingest`, `update-usage`, `update-fshare` and
`export-json` do, on both stores. Its ledger must equal the one the separate commands leave on
the same input: read models, fair-share, the plugin's config."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_ingest import (
    FLUX_DBS,
    R_2_NODES_8_CORES,
    _flux_db,
    _flux_row,
    all_tables,
    counts,
    job,
    site,
    write,
)
from tests.conftest import PG_URL, T0, Store, _drop_schema

CREATED = T0 - 7200  # the ledger's creation: every job below ends in its first period
FIRST = T0  # the first cycle
SECOND = T0 + 3600  # the second


@pytest.fixture
def twin(store: Store, tmp_path: Path) -> Iterator[Store]:
    """A second, separate ledger of the same kind as `store`."""
    if store.kind == "sqlite":
        other = Store("sqlite", f"sqlite:///{tmp_path / 'twin.db'}")
        yield other
        other.run("verify", now=None)
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    other = Store("postgres", f"{PG_URL.split('?')[0]}?schema={schema}")
    try:
        yield other
        other.run("verify", now=None)
    finally:
        _drop_schema(schema)


def _site(store: Store) -> None:
    store.run("create-db", now=CREATED)
    store.run("add-queue", "batch", now=CREATED)
    for args in (
        ["add-bank", "root", "1"],
        ["add-bank", "physics", "1", "--parent-bank", "root"],
        ["add-bank", "chemistry", "1", "--parent-bank", "root"],
        ["add-project", "climate"],
        ["add-user", "-u", "alice", "-i", "5001", "-B", "physics"],
        ["add-user", "-u", "alice", "-B", "chemistry"],
        ["add-user", "-u", "bob", "-i", "5002", "-B", "chemistry"],
    ):
        store.run(*args, now=CREATED)


def _jobs(tmp_path: Path, name: str, end: float, first_id: int) -> str:
    """alice: 100 s and 50 s on one node in physics; bob: 40 s in chemistry."""
    return write(
        tmp_path / name,
        job(first_id, end=end, duration=100),
        job(first_id + 1, end=end, duration=50),
        job(first_id + 2, end=end, duration=40, userid=5002),
    )


def _views(store: Store, now: float) -> dict[str, str]:
    return {
        "tree": store.run("view-bank", "root", "-t", now=now).stdout,
        "users": store.run("list-users", "--json", now=now).stdout,
        "export": store.run("export-json", now=now).stdout,
    }


def test_cron_leaves_the_ledger_the_separate_commands_leave(
    store: Store, twin: Store, tmp_path: Path
) -> None:
    _site(store)
    _site(twin)
    export = tmp_path / "plugin.json"
    for now, name, first_id in ((FIRST, "a.jsonl", 1), (SECOND, "b.jsonl", 10)):
        path = _jobs(tmp_path, name, now - 600, first_id)
        assert store.run("ingest", path, now=now).stdout == counts(3)
        store.run("update-usage", now=now)
        store.run("update-fshare", now=now)
        result = twin.run("cron", "--ingest", path, "--export-json", str(export), now=now)
        at = "2023-11-14T22:13:20+00:00" if now == FIRST else "2023-11-14T23:13:20+00:00"
        assert result.stdout == (
            counts(3) + f"usage updated at {at}\nfair-share updated at {at}\nwrote {export}\n"
        )
        assert result.stderr == ""
        separate, cycled = _views(store, now), _views(twin, now)
        assert cycled == separate
        assert export.read_text(encoding="utf-8") == separate["export"]
        assert all_tables(twin) == all_tables(store)
        assert twin.log_position() == store.log_position()

    # By hand: every job ended in the ledger's first period, so nothing has decayed; alice's
    # physics usage is her 2 x (100 + 50) node-seconds, bob's 2 x 40.
    users = json.loads(_views(twin, SECOND)["users"])
    usage = {(r["username"], r["bank"]): r["job_usage"] for r in users}
    assert usage == {
        ("alice", "physics"): 300.0,
        ("alice", "chemistry"): 0.0,
        ("bob", "chemistry"): 80.0,
    }


def test_cron_reads_jobs_from_stdin(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    lines = "".join(json.dumps(job(i, duration=10 * i)) + "\n" for i in (1, 2))
    result = ledger_store.run("cron", "--ingest", "-", input=lines)
    assert result.stdout.splitlines()[0] == counts(2).strip()
    usage = {
        (r["username"], r["bank"]): r["job_usage"]
        for r in json.loads(ledger_store.run("list-users", "--json").stdout)
    }
    assert usage[("alice", "physics")] == 30.0  # 10 s + 20 s on one node, undecayed


def test_cron_ingests_a_flux_accounting_database(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = _flux_db(
        tmp_path,
        "FluxAccountingv0-60-0.db",
        [_flux_row(101, 5001, T0, R_2_NODES_8_CORES, bank="chemistry")],
    )
    assert (FLUX_DBS / "FluxAccountingv0-60-0.db").exists()
    result = ledger_store.run("cron", "--ingest", path, "--format", "flux-accounting-db")
    assert result.stdout.splitlines()[0] == counts(1).strip()
    users = json.loads(ledger_store.run("list-users", "--json").stdout)
    usage = {(r["username"], r["bank"]): r["job_usage"] for r in users}
    assert usage[("alice", "chemistry")] == 100.0  # 50 s on 2 nodes


def test_cron_reads_sacct_output_from_stdin(ledger_store: Store) -> None:
    """A Slurm site's cron: `sacct -a -X -P ... | fairledger cron --ingest - --format sacct`,
    its steps and unfinished jobs counted as ingest counts them."""
    site(ledger_store)
    sacct = (
        "JobIDRaw|User|Account|Partition|Start|End|NNodes|NCPUS|State\n"
        f"7|alice|physics|batch|{T0 - 30}|{T0}|2|8|COMPLETED\n"
        f"7.batch|alice|physics|batch|{T0 - 30}|{T0}|2|8|COMPLETED\n"
        f"8|bob|chemistry|batch|{T0 - 5}|Unknown|1|4|RUNNING\n"
    )
    result = ledger_store.run("cron", "--ingest", "-", "--format", "sacct", input=sacct)
    assert result.stdout.splitlines()[0] == (
        "recorded 1, duplicate 0, unmatched 0, skipped 2 (steps 1, RUNNING 1)"
    )
    users = json.loads(ledger_store.run("list-users", "--json").stdout)
    usage = {(r["username"], r["bank"]): r["job_usage"] for r in users}
    assert usage[("alice", "physics")] == 60.0  # 30 s on 2 nodes, undecayed


def test_a_bad_line_records_nothing_not_even_the_updates(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    path = write(tmp_path / "bad.jsonl", job(1), "{not json", job(2))
    export = tmp_path / "plugin.json"
    position, tables = ledger_store.log_position(), all_tables(ledger_store)
    result = ledger_store.run("cron", "--ingest", path, "--export-json", str(export), expect=1)
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"fairledger: {path}: line 2: not valid JSON")
    assert result.stderr.endswith("; nothing recorded\n")
    assert ledger_store.log_position() == position
    assert all_tables(ledger_store) == tables
    assert not export.exists()


def test_cron_without_new_jobs(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = write(tmp_path / "a.jsonl", job(1))
    ledger_store.run("cron", "--ingest", path)
    export = tmp_path / "plugin.json"
    result = ledger_store.run("cron", "--export-json", str(export), now=T0 + 60)
    assert result.stdout == (
        "usage updated at 2023-11-14T22:14:20+00:00\n"
        "fair-share updated at 2023-11-14T22:14:20+00:00\n"
        f"wrote {export}\n"
    )
    assert export.read_text(encoding="utf-8") == ledger_store.run("export-json").stdout
    again = ledger_store.run("cron", "--ingest", path, now=T0 + 120)
    assert again.stdout.splitlines()[0] == counts(0, duplicate=1).strip()
    assert again.stderr == "nothing new: every job was already recorded\n"


def test_format_without_ingest_is_a_usage_error(ledger_store: Store) -> None:
    position = ledger_store.log_position()
    result = ledger_store.run("cron", "--format", "jsonl", expect=2)
    assert "--format and --skip-invalid apply to --ingest" in result.stderr
    assert ledger_store.log_position() == position


def test_an_export_nowhere_is_refused_before_anything_is_written(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    path = write(tmp_path / "a.jsonl", job(1))
    position = ledger_store.log_position()
    nowhere = tmp_path / "missing" / "plugin.json"
    result = ledger_store.run("cron", "--ingest", path, "--export-json", str(nowhere), expect=1)
    assert result.stderr == (
        f"fairledger: --export-json {nowhere}: no such directory: {nowhere.parent}\n"
    )
    assert ledger_store.log_position() == position


def test_the_export_replaces_the_file_whole_and_keeps_its_mode(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    export = tmp_path / "plugin.json"
    export.write_text("old\n", encoding="utf-8")
    export.chmod(0o640)
    ledger_store.run("cron", "--export-json", str(export))
    assert export.read_text(encoding="utf-8") == ledger_store.run("export-json").stdout
    assert export.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
