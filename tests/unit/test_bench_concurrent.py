"""The concurrency bench's bound for a stream per cluster (four ingesters, each into a ledger of
its own) counts every job once across the ledgers, and leaves no ledger behind, even when an
ingester fails: a bound that lost jobs, or schemas left on the server, would be worse than none.
Its timeline (bench.lock_timeline) counts only committed transactions as the recording chain,
and shows ingesters into one ledger taking its lock one at a time."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

from bench import concurrent_ingest
from bench.generate import EPOCH, WEEK, SiteSpec, site_spec, write_jobs
from bench.lock_timeline import parse_timeline


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


def test_a_timeline_counts_only_committed_transactions() -> None:
    text = """started 100.0000 0.100 -1.000
tried 100.5000 0.400 -1.000
held 100.6000 0.410 0.000
committed 101.0000 0.600 0.250
tried 101.1000 0.610 0.250
held 101.2000 0.620 0.250
tried 102.0000 0.900 0.400
held 102.5000 0.910 0.400
committed 102.7500 1.000 0.500
ended 103.0000 1.100 -1.000"""
    timeline = parse_timeline(text.splitlines())
    # The transaction held at 101.2 rolled back (no commit): its time is not the chain's.
    assert timeline.held == [(100.6, 101.0), (102.5, 102.75)]
    assert timeline.held_seconds == pytest.approx(0.65)
    assert timeline.first_tried == 100.5
    assert (timeline.ended, timeline.cpu, timeline.server_cpu) == (103.0, 1.1, 0.5)


def test_a_timeline_must_start() -> None:
    with pytest.raises(ValueError, match="must begin with 'started'"):
        parse_timeline(["held 1.0 0.1 -1.000"])


def test_covered_counts_overlaps_once_and_gaps_not_at_all() -> None:
    assert concurrent_ingest.covered([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.8)]) == 4.0
    assert concurrent_ingest.covered([]) == 0.0


def test_staggered_ingesters_are_niced_in_the_order_they_start() -> None:
    launch = concurrent_ingest.Launch(stagger=3, timeline=True)
    first, third = launch.command(0, "URL", "a.jsonl"), launch.command(2, "URL", "c.jsonl")
    assert first[:3] == ["nice", "-n", "0"] and third[:3] == ["nice", "-n", "6"]
    assert third[3:6] == [sys.executable, "-m", "bench.lock_timeline"]
    assert third[-2:] == ["ingest", "c.jsonl"]
    assert concurrent_ingest.Launch().command(2, "URL", "c.jsonl")[:2] != ["nice", "-n"]


def test_ingesters_into_one_ledger_hold_its_lock_one_at_a_time(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = made_ledgers(monkeypatch)
    paths = cluster_files(tmp_path, 600, 3)
    launch = concurrent_ingest.Launch(stagger=2, timeline=True)
    run = concurrent_ingest.concurrent_ingesters(server, site_spec(40), paths, launch)
    assert (run.jobs, run.rows) == (600, 600)
    assert len(run.timelines) == 3
    spans = sorted(span for t in run.timelines for span in t.held)
    assert all(t.held and t.ended is not None and t.cpu > 0 for t in run.timelines)
    # One writers' lock: no two ingesters' transactions overlap.
    assert all(end <= later for (_, end), (later, _) in zip(spans, spans[1:], strict=False))
    assert concurrent_ingest.covered(spans) == pytest.approx(sum(b - a for a, b in spans))
    assert still_there(server, made) == []
