"""The bound on what one job identity may be charged in total: every sum of its charge units
must fit a BIGINT (bounds.ASSOCIATION_CHARGE_UNITS_MAX), so an input that would pass it is
refused before anything is recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ledger import bounds
from ledger.errors import InvalidValue

if TYPE_CHECKING:
    from ledger.store.connections import Connection

Identity = tuple[int, str, str]
Charge = tuple[Identity, int, Any]  # a job's identity, its charge units, its id


def charges_of(records: list[dict[str, Any]]) -> list[Charge]:
    """What each record adds to its identity's total, in order (a record whose charge an
    opening balance holds, recorded with charge_units 0, adds nothing)."""
    return [
        (
            (
                -1 if r.get("userid") is None else int(r["userid"]),
                r.get("username") or "",
                r.get("bank") or "",
            ),
            bounds.charge_units(r["charge"]),
            r["id"],
        )
        for r in records
        if not r.get("in_balance")
    ]


def recorded_charges(conn: Connection) -> ChargeTotals:
    """What ingest checks new charges against, from the caught-up read model `conn`."""
    # Here, not at the top: ingest's helper processes import this module for charges_of,
    # and the read model's writers would cost each of them a tenth of a second to import.
    from projections.writers import usage_tables

    return ChargeTotals(
        usage_tables.total_charge_units(conn), lambda: usage_tables.identity_charge_units(conn)
    )


def input_charges_only() -> ChargeTotals:
    """The bound checked against an input alone (an import into an empty ledger)."""
    return ChargeTotals(0, dict)


class ChargeTotals:
    """Per job identity (userid, username, bank as recorded, like period_totals' key), the
    charge units recorded and read so far: an input that would take one past
    bounds.ASSOCIATION_CHARGE_UNITS_MAX is refused before anything is recorded (a duplicate of
    a recorded job counts too: conservative, and only near the bound). While everything
    recorded plus everything read stays under the bound, no identity can pass it, so the
    per-identity totals (a scan of every period total) are read only when that sum does not."""

    def __init__(self, site_total: int | None, load: Callable[[], dict[Identity, int]]) -> None:
        self.site_total = site_total
        self.load = load
        self.read_units = 0
        self.read: dict[Identity, int] = {}
        self.recorded: dict[Identity, int] | None = None

    def add_charges(self, charges: list[Charge]) -> None:
        for key, units, job_id in charges:
            self.read[key] = self.read.get(key, 0) + units
            self.read_units += units
            if self.recorded is None:
                if (
                    self.site_total is not None
                    and self.site_total + self.read_units <= bounds.ASSOCIATION_CHARGE_UNITS_MAX
                ):
                    continue
                self.recorded = self.load()
                for earlier in self.read:  # read before the sum came near the bound
                    self._check(earlier, job_id)
            else:
                self._check(key, job_id)

    def _check(self, key: Identity, job_id: Any) -> None:
        assert self.recorded is not None
        total = self.recorded.get(key, 0) + self.read[key]
        if total > bounds.ASSOCIATION_CHARGE_UNITS_MAX:
            who = "/".join(bounds.printable(str(part)) for part in key if part not in ("", -1))
            raise InvalidValue(
                f"job {job_id}: the charges of {who} would total "
                f"{total / bounds.CHARGE_UNITS:.5f}, more than the ledger can sum "
                f"({bounds.ASSOCIATION_CHARGE_UNITS_MAX / bounds.CHARGE_UNITS:.5f}); "
                "nothing recorded"
            )
