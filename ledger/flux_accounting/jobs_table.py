"""The `jobs` table of a flux-accounting database, read as ingest records in the order the jobs
ended (what `ingest --format flux-accounting-db` and import-flux-accounting record)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger.errors import InvalidValue, NotFound
from ledger.flux_accounting.jobs import record_from_flux_row


def flux_job_records(path: str) -> Iterator[dict[str, Any]]:
    """Every row of PATH's jobs table as a record for JobRecord to validate; read-only, so a
    source that flux-accounting still writes is never changed."""
    if not os.path.exists(path):
        raise NotFound(f"no such file: {path}")
    # A URI built from the path, not pasted into one: a "?" or "#" in a file name would end the
    # path there and open (creating it read-write) another file.
    conn = sqlite3.connect(Path(path).absolute().as_uri() + "?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        for row in conn.execute("SELECT * FROM jobs ORDER BY t_inactive, id"):
            yield record_from_flux_row(dict(row))
    except sqlite3.Error as err:
        raise InvalidValue(
            f"{path}: not a flux-accounting database with a jobs table ({err})"
        ) from None
    finally:
        conn.close()
