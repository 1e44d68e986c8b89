"""The ingest ceiling's writer records every job once, whichever form the helpers hand their
rows over in: a ceiling that lost rows would report a rate it did not earn."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import ingest_ceiling as ceiling


def recorded(folder: Path, form: str, lines: list[bytes]) -> list[tuple[object, ...]]:
    conn = ceiling.open_store("sqlite", str(folder))
    try:
        writer = ceiling.Writer(conn)
        for task in ceiling.pieces(lines, form, str(folder)):
            writer.write(ceiling.prepare(task))
        writer.commit()
        ceiling.check_recorded(conn, len(lines))
        rows = conn.raw.execute("SELECT * FROM jobs ORDER BY id").fetchall()
        keys = conn.raw.execute("SELECT * FROM job_keys ORDER BY id").fetchall()
        return [*rows, *keys]
    finally:
        ceiling.close_store(conn)


def test_tuples_and_piece_files_record_the_same_rows(tmp_path: Path) -> None:
    lines = ceiling.bench_lines(12_000, 200)
    ceiling._SITE = ceiling.site_of(200)
    as_tuples = recorded(tmp_path, ceiling.TUPLES, lines)
    as_files = recorded(tmp_path, ceiling.PIECE_FILE, lines)
    assert len(as_tuples) == 24_000
    assert as_tuples == as_files
    assert not list(tmp_path.glob("piece-*.db"))  # each piece file removed once copied


def test_a_store_short_of_jobs_is_refused(tmp_path: Path) -> None:
    lines = ceiling.bench_lines(6_000, 200)
    ceiling._SITE = ceiling.site_of(200)
    conn = ceiling.open_store("sqlite", str(tmp_path))
    try:
        writer = ceiling.Writer(conn)
        first = next(ceiling.pieces(lines, ceiling.TUPLES, str(tmp_path)))
        writer.write(ceiling.prepare(first))
        writer.commit()
        with pytest.raises(SystemExit, match="5000, 5000, 5000"):
            ceiling.check_recorded(conn, len(lines))
    finally:
        ceiling.close_store(conn)


def test_the_product_steps_give_the_rows_and_digests_of_the_product_s_own_validation(
    tmp_path: Path,
) -> None:
    """The second ceiling runs each line through what the product's helpers run: the same
    job rows as the stripped steps (the same charge), and each key's digest the one the
    product's own validation gives the line, not a digest of its bytes."""
    from ledger.state import SiteState
    from ledger.usecases.spool import records_of
    from ledger.usecases.validation import Terms, validate_chunk

    lines = ceiling.bench_lines(6_000, 200)
    ceiling._SITE = ceiling.site_of(200)
    stripped = ceiling.prepare(next(ceiling.pieces(lines, ceiling.TUPLES, str(tmp_path))))
    stepped = ceiling.prepare(
        next(ceiling.pieces(lines, ceiling.TUPLES, str(tmp_path), ceiling.PRODUCT_STEPS))
    )
    assert stepped.count == stripped.count == 5_000
    assert stepped.jobs == stripped.jobs
    validated = validate_chunk(
        [line.decode() for line in lines[:5_000]], 1, Terms(float("inf"), SiteState())
    )
    own = [digest for chunk in validated.spooled for _record, digest in records_of(chunk)]
    assert [key[2] for key in stepped.keys] == own
    assert [key[2] for key in stripped.keys] != own


def test_the_product_steps_refuse_a_bad_line_by_its_message(tmp_path: Path) -> None:
    lines = ceiling.bench_lines(10, 20)
    ceiling._SITE = ceiling.site_of(20)
    lines[3] = lines[3].replace(b'"nnodes":', b'"nnodes":-')
    task = next(ceiling.pieces(lines, ceiling.TUPLES, str(tmp_path), ceiling.PRODUCT_STEPS))
    with pytest.raises(ValueError, match="line 4: .*nnodes"):
        ceiling.prepare(task)


def test_the_cpus_a_rate_needs_are_the_machine_cpu_a_job_times_the_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ceiling.os, "cpu_count", lambda: 2)
    run = ceiling.Run(wall=5.0, writer_cpu=0.5, machine_cpu=10.2)  # 40.8 µs a job
    assert ceiling._cpus_needed(run, 250_000, 50_000) == "2.04 of 2 CPUs busy"
