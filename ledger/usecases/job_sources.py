"""Where ingest's input comes from: a JSON-lines file, a byte stream (standard input), or a
flux-accounting database's jobs table. Each is an iterator that the validation pass reads once."""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from typing import IO, Any

from ledger.errors import NotFound
from ledger.flux_accounting.jobs_table import flux_job_records

FORMATS = ("jsonl", "flux-accounting-db")


def input_lines(path: str, fmt: str) -> Iterator[Any]:
    """The lines (JSON texts) or records of the file at `path` in format `fmt`; a missing
    file is NotFound now, before the ledger is opened."""
    if not os.path.exists(path):
        raise NotFound(f"no such file: {path}")
    if fmt == "flux-accounting-db":
        return flux_job_records(path)
    return _json_lines(path)


def _json_lines(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as handle:
        yield from handle


def stream_lines(stream: IO[bytes]) -> Iterator[str]:
    """A byte stream's lines as UTF-8 whatever the locale's encoding (JSON lines are UTF-8),
    read once by the validation pass: nothing of it is kept but the validated records."""
    yield from codecs.iterdecode(stream, "utf-8")
