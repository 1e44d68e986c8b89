"""The concurrency bench's bound for a stream per cluster (four ingesters, each into a ledger of
its own) counts every job once across the ledgers, and leaves no ledger behind, even when an
ingester fails: a bound that lost jobs, or schemas left on the server, would be worse than none."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from bench import concurrent_ingest
from bench.generate import EPOCH, WEEK, SiteSpec, site_spec, write_jobs


def made_ledgers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The schemas the bench makes from here on, whatever else runs on the server."""
    made: list[str] = []
    fresh = concurrent_ingest._fresh_ledger

    def recorded(base: str, spec: SiteSpec) -> tuple[str, str]:
        url, schema = fresh(base, spec)
        made.append(schema)
        return url, schema

    monkeypatch.setattr(concurrent_ingest, "_fresh_ledger", recorded)
    return made


def still_there(server: str, schemas: list[str]) -> list[str]:
    with psycopg.connect(server, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (schemas,)
        ).fetchall()
    return [name for (name,) in rows]


def cluster_files(folder: Path, jobs: int, ingesters: int) -> list[str]:
    spec = site_spec(40)
    whole = str(folder / "jobs.jsonl")
    write_jobs([whole], spec, jobs, 1, EPOCH, EPOCH + WEEK)
    return concurrent_ingest.split_by_cluster(whole, str(folder), ingesters)


def test_each_ingester_into_its_own_ledger_records_every_job_once(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = made_ledgers(monkeypatch)
    paths = cluster_files(tmp_path, 300, 3)
    run = concurrent_ingest.separate_ledgers(server, site_spec(40), paths)
    assert (run.jobs, run.rows) == (300, 300)
    assert run.wall > 0
    assert len(set(made)) == 3
    assert still_there(server, made) == []


def test_a_failed_ingester_is_reported_and_every_ledger_dropped(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = made_ledgers(monkeypatch)
    paths = cluster_files(tmp_path, 60, 2)
    with open(paths[1], "a", encoding="utf-8") as out:
        out.write('{"cluster":"c2","id":"not a job"}\n')
    with pytest.raises(RuntimeError, match='an ingester failed: .*line 31: id: value "not a job"'):
        concurrent_ingest.separate_ledgers(server, site_spec(40), paths)
    assert len(set(made)) == 2
    assert still_there(server, made) == []
