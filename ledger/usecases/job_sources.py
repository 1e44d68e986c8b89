"""Where ingest's input comes from: a JSON-lines or sacct file, a byte stream (standard input),
or a flux-accounting database's jobs table. Each is an iterator that the validation pass reads
once.

Text (JSON lines, sacct's output) may come gzip-compressed (`jobs.jsonl.gz`, or `zcat`-less
pipes into `-`): the gzip magic bytes, not the name, decide, so a renamed file reads the same.
Every line must be UTF-8 (JSON text is); one that is not is refused naming its line, before
anything is recorded.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from ledger.errors import InvalidValue, NotFound
from ledger.flux_accounting.jobs_table import flux_job_records

FORMATS = ("jsonl", "flux-accounting-db", "sacct")
TEXT_FORMATS = ("jsonl", "sacct")  # read as lines of a file or of standard input
GZIP_MAGIC = b"\x1f\x8b"
# What a damaged gzip stream raises part-way through: a bad header, a truncated member, a
# corrupt block.
_BAD_GZIP = (gzip.BadGzipFile, EOFError, zlib.error)


def input_lines(path: str, fmt: str) -> Iterator[Any]:
    """The lines (JSON texts) or records of the file at `path` in format `fmt`; a missing
    file, a directory or an unreadable file is refused now, before the ledger is opened."""
    if not os.path.exists(path):
        raise NotFound(f"no such file: {path}")
    if os.path.isdir(path):
        raise InvalidValue(f"{path}: is a directory (give a file of jobs, or - for stdin)")
    if fmt == "flux-accounting-db":
        return flux_job_records(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 -- closed by the generator that reads it
    except OSError as err:
        raise InvalidValue(f"cannot read {path}: {err.strerror or err}") from None
    return _closing(handle, path)


def _closing(handle: IO[bytes], name: str) -> Iterator[str]:
    with handle:
        yield from stream_lines(handle, name)


def stream_lines(stream: IO[bytes], name: str = "-") -> Iterator[str]:
    """A byte stream's lines, gunzipped when it starts with gzip's magic bytes, each decoded
    as UTF-8 whatever the locale's encoding (JSON lines are UTF-8), read once by the validation
    pass: nothing of it is kept but the validated records."""
    buffered = _peekable(stream)
    compressed = buffered.peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)] == GZIP_MAGIC
    source: IO[bytes] | gzip.GzipFile = gzip.GzipFile(fileobj=buffered) if compressed else buffered
    number = 0
    try:
        for number, raw in enumerate(source, start=1):  # noqa: B007 -- read after the loop
            yield _decoded(raw, name, number)
    except _BAD_GZIP as err:
        raise InvalidValue(
            f"{name}: not a readable gzip file after line {number} ({err}); nothing recorded"
        ) from None
    except OSError as err:
        raise InvalidValue(f"cannot read {name}: {err.strerror or err}") from None


def _peekable(stream: IO[bytes]) -> io.BufferedReader:
    """`stream` with peek(), so that the magic bytes are looked at without consuming them (a
    pipe cannot seek back)."""
    if isinstance(stream, io.BufferedReader):
        return stream
    return io.BufferedReader(cast(Any, stream))


def _decoded(raw: bytes, name: str, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidValue(
            f"{name}: line {number}: not UTF-8 ({err.reason}); nothing recorded"
        ) from None
