"""The read models as they stood at a past moment T, built on demand.

T maps to a log position P through the log index (time is monotone in log order); the site
state at P comes from the Site aggregate at its version then (loaded from the nearest snapshot,
not a replay of all history); usage is computed at T from the jobs recorded up to P; fair-share
is the snapshot in force at P, recomputed exactly at its FairshareUpdated marker. The result is
an in-memory SQLite database with the same tables, so every read query runs on it unchanged.
Events recorded after T have positions after P, so the answer for T never changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ledger.app import Ledger
from ledger.clock import iso
from ledger.errors import InvalidValue
from ledger.reducers import Touched
from ledger.site import SITE_ID
from ledger.site_usage import bank_usage, site_fairshare
from ledger.state import SiteState
from ledger.storage import Connection, StoreConfig
from projections import schema, usage_tables
from projections.site_tables import write_touched


@dataclass(frozen=True)
class Moment:
    """A point of the log: the time asked about, and the last event at or before it."""

    asked: float
    position: int
    event_time: float
    site_version: int

    def describe(self) -> str:
        return (
            f"as of {iso(self.asked)}: log position {self.position} "
            f"(event of {iso(self.event_time)})"
        )


def moment_at(conn: Connection, at: float) -> Moment:
    rows = conn.query(
        "SELECT position, at, site_version FROM log_index WHERE position = "
        "(SELECT MAX(position) FROM log_index WHERE at <= ?)",
        (at,),
    )
    if not rows:
        first = conn.query("SELECT MIN(at) AS first FROM log_index")[0]["first"]
        raise InvalidValue(
            f"no ledger at {iso(at)}: the ledger was created at {iso(float(first))}"
            if first is not None
            else f"no ledger at {iso(at)}"
        )
    row = rows[0]
    return Moment(at, int(row["position"]), float(row["at"]), int(row["site_version"]))


def fairshare_marker(conn: Connection, position: int) -> Moment | None:
    """The FairshareUpdated in force at `position`: the latest at or before it."""
    rows = conn.query(
        "SELECT position, at, site_version FROM log_index WHERE position = "
        "(SELECT MAX(position) FROM log_index WHERE kind = 'fairshare' AND position <= ?)",
        (position,),
    )
    if not rows:
        return None
    row = rows[0]
    return Moment(
        float(row["at"]), int(row["position"]), float(row["at"]), int(row["site_version"])
    )


def site_state_at(ledger: Ledger, version: int) -> SiteState:
    site: Any = ledger.repository.get(SITE_ID, version=version)
    return site.state  # type: ignore[no-any-return]


def _periods_current(ledger: Ledger, state: SiteState) -> bool:
    today = ledger.state().config["priority_decay_half_life"]
    return float(today) == float(state.config["priority_decay_half_life"])


def fairshare_at(ledger: Ledger, conn: Connection, position: int) -> dict[tuple[str, str], float]:
    """Fair-share of the snapshot in force at `position` ({} before the first one)."""
    marker = fairshare_marker(conn, position)
    if marker is None:
        return {}
    state = site_state_at(ledger, marker.site_version)
    usage = usage_tables.usage_at(
        conn,
        state,
        marker.event_time,
        max_position=marker.position,
        periods_current=_periods_current(ledger, state),
    )
    return site_fairshare(state, usage)


def materialize(ledger: Ledger, conn: Connection, moment: Moment) -> Connection:
    """The read-model tables at `moment`, in a new in-memory database."""
    state = site_state_at(ledger, moment.site_version)
    memory = Connection(StoreConfig(kind="sqlite", path=":memory:"))
    for ddl in schema.TABLES.values():
        memory.execute(ddl)
    everything = Touched(
        banks=set(state.banks),
        users=set(state.associations),
        queues=set(state.queues),
        projects=set(state.projects),
        factors=True,
        config=True,
    )
    write_touched(memory, state, everything)
    usage = usage_tables.usage_at(
        conn,
        state,
        moment.asked,
        max_position=moment.position,
        periods_current=_periods_current(ledger, state),
    )
    shares = fairshare_at(ledger, conn, moment.position)
    memory.executemany(
        "UPDATE association_table SET job_usage = ?, fairshare = ? WHERE username = ? AND bank = ?",
        [(value.usage, shares.get(key, 0.5), key[0], key[1]) for key, value in usage.items()],
    )
    memory.executemany(
        "UPDATE bank_table SET job_usage = ? WHERE bank = ?",
        [(v, k) for k, v in bank_usage(state, usage).items()],
    )
    memory.execute(usage_tables.TABLES["job_usage_bins"])
    memory.executemany(
        "INSERT INTO job_usage_bins VALUES (?, ?, ?, ?)",
        [(k[0], k[1], moment.asked, _bins(v.bins)) for k, v in usage.items()],
    )
    return memory


def _bins(values: list[float]) -> str:
    return json.dumps(values)
