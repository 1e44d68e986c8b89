"""export-db and pop-db: the site's tables as CSV files in flux-accounting's column layout,
written out (for its pop-db or ours) and loaded in through the Site's validated commands."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ledger.clock import AsOf
from ledger.errors import InvalidValue
from ledger.flux_accounting.columns import TABLE_COLUMNS
from ledger.flux_accounting.csv_files import Loaded, load_tables, read_csv_tables
from ledger.usecases.session import Session
from projections.queries.flux_tables import table_rows


@dataclass(frozen=True)
class Written:
    path: str
    rows: int


def export_tables(s: Session, directory: str, as_of: AsOf | None = None) -> Iterator[Written]:
    """One CSV file per table in `directory` (created if missing), as the site stands now or
    at `as_of`; each file reported as it is written."""
    conn = s.read(as_of)
    try:
        os.makedirs(directory, exist_ok=True)
        for table, columns in TABLE_COLUMNS.items():
            rows = table_rows(conn, table)
            path = os.path.join(directory, f"{table}.csv")
            with open(path, "w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)  # flux-accounting's export-db: csv's default dialect
                writer.writerow(columns)
                writer.writerows([row[c] for c in columns] for row in rows)
            yield Written(path, len(rows))
    except OSError as err:
        # An empty or unwritable --dir, a file in its way, a full disk: one line, not a trace.
        raise InvalidValue(f"cannot write {err.filename!r}: {err.strerror or err}") from None


def load_csv_files(
    s: Session,
    files: Sequence[str],
    fields: str | None = None,
    actor: str | None = None,
    reason: str | None = None,
) -> Loaded:
    """Load CSV files named after their tables, each row one event, in one change: a refused
    row (listed in the error) writes nothing at all. `fields`: "A,B", only these columns."""
    tables = read_csv_tables(files, fields)
    names = ", ".join(os.path.basename(t.path) for t in tables)
    return s.change(
        lambda site, stamp: load_tables(site, stamp, tables),
        reason or f"pop-db {names}",
        actor,
        source={"pop-db": [os.path.abspath(t.path) for t in tables]},
    )
