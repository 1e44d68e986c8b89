"""export-db -F: the site's bank tree, usage included, as flux-accounting's fairshare-emulate
reads it."""

from __future__ import annotations

from typing import Any

from ledger.clock import AsOf
from ledger.flux_accounting.emulator_tree import emulator_tree
from ledger.usecases.session import Session
from projections.queries import site as queries


def export_emulator_tree(s: Session, as_of: AsOf | None = None) -> dict[str, Any]:
    """Every bank and association, inactive ones included, as the site stands now or at
    `as_of`; usage as of the last update-usage, as view-bank shows it."""
    conn = s.read(as_of)
    banks = queries.banks(conn, include_inactive=True)
    return emulator_tree(banks, queries.associations(conn))
