"""The private spool between ingest's two passes: validated records written a chunk at a time
and read back once, so that a million-line input never sits in memory."""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Any

SPOOL_PREFIX = "fairledger-spool-"


def spool_file() -> IO[bytes]:
    """A private temporary file for the validated records, unlinked as it is opened: it never
    outlives the process, not even a `kill -9`."""
    return tempfile.TemporaryFile(prefix=SPOOL_PREFIX)


# A record with its identity digest (ledger.chain.record_digest), made in pass 1: where
# helpers run it, they take it off the process that records.
Spooled = tuple[dict[str, Any], str]


def chunk_bytes(records: list[Spooled]) -> bytes:
    """A chunk of records as the spool holds it. Pickled a chunk at a time: this private
    temporary file is read back only by pass 2 of the same process (its pass 1 helpers make
    the bytes), and pickle is several times faster than JSON here."""
    return pickle.dumps(records, pickle.HIGHEST_PROTOCOL)


def records_of(data: bytes) -> list[Spooled]:
    """The records of one chunk's bytes (chunk_bytes)."""
    return pickle.loads(data)  # type: ignore[no-any-return]


def spooled(spool: IO[bytes]) -> Iterator[Spooled]:
    """Every record written to `spool`, with its digest, in order."""
    spool.seek(0)
    while True:
        try:
            yield from pickle.load(spool)
        except EOFError:
            return
