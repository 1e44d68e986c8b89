"""What ingest accepts as input, on both stores: gzip-compressed JSON lines read transparently
(a file or standard input), and input it cannot read (a directory, text that is not UTF-8, a
damaged gzip file) refused in one line, exit 1, with nothing recorded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.cli.test_ingest import _flux_db, _flux_row, job, recorded_in_log, site
from tests.conftest import T0, Store


def jobs_in_log(store: Store) -> list[str]:
    return sorted(str(job_id) for _cluster, job_id in recorded_in_log(store))


def jsonl(*records: dict[str, object]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_a_gzip_file_is_read_as_its_lines(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    path = tmp_path / "jobs.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl(job(1), job(2))))
    ledger_store.run("ingest", str(path))
    assert jobs_in_log(ledger_store) == ["1", "2"]


def test_gzip_is_known_by_its_bytes_not_its_name(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    renamed = tmp_path / "jobs.jsonl"
    renamed.write_bytes(gzip.compress(jsonl(job(1))))
    ledger_store.run("ingest", str(renamed))
    piped = gzip.compress(jsonl(job(2)))
    ledger_store.run("ingest", "-", input=piped)
    assert jobs_in_log(ledger_store) == ["1", "2"]


def test_a_directory_is_one_line(ledger_store: Store, tmp_path: Path) -> None:
    for fmt in ("jsonl", "flux-accounting-db"):
        result = ledger_store.run("ingest", "--format", fmt, str(tmp_path), expect=1)
        assert result.stderr == (
            f"fairledger: {tmp_path}: is a directory (give a file of jobs, or - for stdin)\n"
        )
    assert jobs_in_log(ledger_store) == []


def test_text_that_is_not_utf8_is_refused_naming_its_line(
    ledger_store: Store, tmp_path: Path
) -> None:
    site(ledger_store)
    latin1 = jsonl(job(1)) + b'{"id": "caf\xe9"}\n'
    plain, packed = tmp_path / "latin1.jsonl", tmp_path / "latin1.jsonl.gz"
    plain.write_bytes(latin1)
    packed.write_bytes(gzip.compress(latin1))
    for args, given in (
        ((str(plain),), None),
        ((str(packed),), None),
        (("-",), latin1),
        (("-",), gzip.compress(latin1)),
    ):
        result = ledger_store.run("ingest", *args, input=given, expect=1)
        assert result.stderr == (
            f"fairledger: {args[0]}: line 2: not UTF-8 (invalid continuation byte); "
            "nothing recorded\n"
        )
    assert jobs_in_log(ledger_store) == []


def test_a_damaged_gzip_file_is_one_line(ledger_store: Store, tmp_path: Path) -> None:
    site(ledger_store)
    whole = gzip.compress(jsonl(*(job(i) for i in range(1, 200))))
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    garbled = tmp_path / "garbled.jsonl.gz"
    garbled.write_bytes(whole[:20] + bytes(b ^ 0x55 for b in whole[20:]))
    for path in (truncated, garbled):
        result = ledger_store.run("ingest", str(path), expect=1)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith(f"fairledger: {path}: not a readable gzip file after line ")
        assert lines[0].endswith("; nothing recorded")
    assert jobs_in_log(ledger_store) == []


def test_a_flux_accounting_database_whose_name_has_uri_characters(
    ledger_store: Store, tmp_path: Path
) -> None:
    """A "?" or "#" in the file's name is part of its name, not a URI's query: the jobs are
    read from that file and no other file is created."""
    site(ledger_store)
    one_node = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}]}}
    source = tmp_path / "source"
    source.mkdir()
    made = Path(_flux_db(source, "FluxAccountingv0-60-0.db", [_flux_row(7, 5001, T0, one_node)]))
    odd = source / "jobs?x#y.db"
    made.rename(odd)
    ledger_store.run("ingest", "--format", "flux-accounting-db", str(odd))
    assert jobs_in_log(ledger_store) == ["7"]
    assert sorted(p.name for p in source.iterdir()) == ["jobs?x#y.db"]
