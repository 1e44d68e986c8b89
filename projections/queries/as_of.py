"""The read models as they stood at a past moment T, built on demand.

T maps to a log position P through the log index (time is monotone in log order); the site
state at P comes from the Site aggregate at its version then (loaded from the nearest snapshot,
not a replay of all history); usage is computed at T from the jobs recorded up to P; fair-share
is what the snapshot in force at P left in force, read from its checkpoint
(projections.writers.checkpoints), or an opening balance's stored value: the rule is the
domain's (ledger.fairshare_in_force), the one the projector keeps the live tables by. The
result is an in-memory SQLite database with the same tables, so every read query runs on it
unchanged.
Events recorded after T have positions after P, so the answer for T never changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger import events as ev
from ledger.clock import iso
from ledger.errors import InvalidValue
from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE, InForce, in_force
from ledger.reducers import Touched
from ledger.site import SITE_ID
from ledger.site_usage import AssociationUsage, AssocKey, bank_usage, site_fairshare
from ledger.state import SiteState
from ledger.store.application import Ledger
from ledger.store.connections import Connection, StoreConfig
from projections.writers import checkpoints, schema, usage_tables
from projections.writers.bins import bins_blob
from projections.writers.checkpoints import Entry
from projections.writers.site_tables import (
    ASSOCIATION_COLUMNS,
    USAGE_COLUMNS,
    association_row,
    associations_in_order,
    write_touched,
)


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


@dataclass(frozen=True)
class Recomputed:
    """A snapshot computed again from the events: the state, usage and walk it saw."""

    state: SiteState
    usage: dict[AssocKey, AssociationUsage]
    shares: dict[AssocKey, float]


def recompute(ledger: Ledger, conn: Connection, marker: Moment) -> Recomputed:
    """The walk of the FairshareUpdated at `marker` done again from the jobs recorded up to it:
    the reference its checkpoint is tested against (tests/cli/test_checkpoints.py)."""
    state = site_state_at(ledger, marker.site_version)
    usage = usage_then(conn, state, marker.event_time, marker.position)
    return Recomputed(state, usage, site_fairshare(state, usage))


def usage_then(
    conn: Connection, state: SiteState, at: float, position: int
) -> dict[AssocKey, AssociationUsage]:
    """Every association's usage at `at`, from the jobs recorded up to `position` (`state`:
    the site then)."""
    return usage_tables.usage_at(
        conn, state, at, max_position=position, periods_current=periods_current(conn, state)
    )


class Snapshot:
    """One FairshareUpdated marker: its checkpoint (read at once), and the state and an
    association's usage it saw (computed again only when asked for)."""

    def __init__(
        self, ledger: Ledger, conn: Connection, marker: Moment, entries: dict[AssocKey, Entry]
    ) -> None:
        self._ledger = ledger
        self._conn = conn
        self.marker = marker
        self.entries = entries
        self.shares = {key: e.fairshare for key, e in entries.items() if e.ranked}
        self._state: SiteState | None = None

    @property
    def ranked(self) -> int:
        """N: the active associations the walk ranked."""
        return len(self.shares)

    def rank(self, key: AssocKey) -> int | None:
        """fair-share = rank / N, rank counting down from N (the best); tied associations share
        the higher rank. None for an association the walk left out (inactive, or not there)."""
        entry = self.entries.get(key)
        return entry.rank if entry is not None else None

    @property
    def state(self) -> SiteState:
        """The site state the walk saw."""
        if self._state is None:
            self._state = site_state_at(self._ledger, self.marker.site_version)
        return self._state

    def usage_of(self, key: AssocKey) -> AssociationUsage:
        """The association's usage (and bins) the walk saw, from its user's jobs only."""
        return usage_tables.association_usage_at(
            self._conn,
            self.state,
            key,
            self.marker.event_time,
            max_position=self.marker.position,
            periods_current=periods_current(self._conn, self.state),
        )


def periods_current(conn: Connection, state: SiteState) -> bool:
    """jobs.period was cut with today's half-life (the read model's config): is it the one
    `state` had?"""
    today = conn.query("SELECT value FROM config_table WHERE key = 'priority_decay_half_life'")[0][
        "value"
    ]
    return float(today) == float(state.config["priority_decay_half_life"])


def marker_at_position(conn: Connection, position: int) -> Moment:
    row = conn.query(
        "SELECT position, at, site_version FROM log_index WHERE position = ?", (position,)
    )[0]
    return Moment(
        float(row["at"]), int(row["position"]), float(row["at"]), int(row["site_version"])
    )


@dataclass
class Snapshots:
    """Snapshots read from their checkpoints, each at most once per command."""

    ledger: Ledger
    conn: Connection
    _cache: dict[int, Snapshot] = field(default_factory=dict)
    _markers: dict[int, Moment | None] = field(default_factory=dict)
    _balances: list[tuple[int, dict[AssocKey, float]]] | None = None

    def at(self, marker: Moment) -> Snapshot:
        cached = self._cache.get(marker.position)
        if cached is None:
            entries = checkpoints.read(self.conn, marker.position)
            cached = Snapshot(self.ledger, self.conn, marker, entries)
            self._cache[marker.position] = cached
        return cached

    def in_force(self, position: int) -> Snapshot | None:
        """The snapshot in force at `position` (None before the first update-fshare)."""
        if position not in self._markers:  # asked once per association by as-of reads
            self._markers[position] = fairshare_marker(self.conn, position)
        marker = self._markers[position]
        return None if marker is None else self.at(marker)

    def source(self, value: InForce) -> Snapshot | None:
        """The snapshot whose walk gave `value` (None: no walk did)."""
        if value.source is None:
            return None
        cached = self._cache.get(value.source)
        return cached or self.at(marker_at_position(self.conn, value.source))

    def imported(self, position: int) -> dict[AssocKey, tuple[int, float]]:
        """imported_fairshare() at `position`, the balances read once per command."""
        if self._balances is None:
            self._balances = _balances(self.ledger, self.conn, 2**62)
        return _latest_balances(self._balances, position)


def fairshare_value(snapshots: Snapshots, key: AssocKey, position: int) -> InForce:
    """The fair-share of `key` in force at `position` (ledger.fairshare_in_force.in_force)."""
    snapshot = snapshots.in_force(position)
    entry = snapshot.entries.get(key) if snapshot is not None else None
    ranked_at = snapshot.marker.position if snapshot is not None else 0
    return in_force(entry, ranked_at, snapshots.imported(position).get(key))


def imported_fairshare(
    ledger: Ledger, conn: Connection, position: int
) -> dict[AssocKey, tuple[int, float]]:
    """The fair-share values opening balances (UsageBalanceImported) brought over, or
    --fairshare (FairshareSet) set, up to
    `position`: key -> (the balance's position, the value the source had stored). Such a value
    is in force from its balance until the next update-fshare ranks the association."""
    return _latest_balances(_balances(ledger, conn, position), position)


def _balances(
    ledger: Ledger, conn: Connection, position: int
) -> list[tuple[int, dict[AssocKey, float]]]:
    """Each opening balance up to `position`, in log order: (its position, the values it
    showed)."""
    out = []
    for row in conn.query(
        "SELECT position FROM log_index WHERE kind = 'balance' AND position <= ? ORDER BY position",
        (position,),
    ):
        (notification,) = ledger.recorder.select_notifications(start=int(row["position"]), limit=1)
        event: Any = ledger.mapper.to_domain_event(notification)
        if isinstance(event, ev.FairshareSet):  # a value set by hand: in force the same way
            shown = {(event.username, event.bank): float(event.new)}
        elif isinstance(event, ev.UsageCleared):  # clear-usage: back to a new association's
            shown = {(u, b): NEW_ASSOCIATION_FAIRSHARE for u, b in event.associations}
        else:
            shown = {(username, bank): float(value) for username, bank, _u, value in event.shown}
        out.append((int(row["position"]), shown))
    return out


def _latest_balances(
    balances: list[tuple[int, dict[AssocKey, float]]], position: int
) -> dict[AssocKey, tuple[int, float]]:
    out: dict[AssocKey, tuple[int, float]] = {}
    for at, shown in balances:
        if at <= position:
            out.update({key: (at, value) for key, value in shown.items()})
    return out


def _values_in_force(
    ledger: Ledger, conn: Connection, moment: Moment, keys: list[AssocKey]
) -> dict[AssocKey, float]:
    """Each association's fair-share in force at the moment."""
    marker = fairshare_marker(conn, moment.position)
    ranked_at = marker.position if marker is not None else 0
    entries = checkpoints.read(conn, ranked_at) if marker is not None else {}
    imported = imported_fairshare(ledger, conn, moment.position)
    return {key: in_force(entries.get(key), ranked_at, imported.get(key)).value for key in keys}


def materialize(ledger: Ledger, conn: Connection, moment: Moment) -> Connection:
    """The read-model tables at `moment`, in a new in-memory database."""
    state = site_state_at(ledger, moment.site_version)
    memory = Connection(StoreConfig(kind="sqlite", path=":memory:"))
    for ddl in schema.TABLES.values():
        memory.execute(ddl)
    # Every table but the associations', which are written below with their usage and
    # fair-share: written first and updated, 10,000 of them took twice as long.
    everything = Touched(
        banks=set(state.banks),
        queues=set(state.queues),
        projects=set(state.projects),
        qos=set(state.qos),
        factors=True,
        config=True,
    )
    write_touched(memory, state, everything)
    usage = usage_then(conn, state, moment.asked, moment.position)
    shares = _values_in_force(ledger, conn, moment, list(usage))
    _insert_associations(memory, state, usage, shares)
    memory.executemany(
        "UPDATE bank_table SET job_usage = ? WHERE bank = ?",
        [(v, k) for k, v in bank_usage(state, usage).items()],
    )
    memory.execute(usage_tables.TABLES["job_usage_bins"])
    memory.executemany(
        "INSERT INTO job_usage_bins (username, bank, bins) VALUES (?, ?, ?)",
        [(k[0], k[1], bins_blob(v.bins)) for k, v in usage.items()],
    )
    return memory


def _insert_associations(
    memory: Connection,
    state: SiteState,
    usage: dict[AssocKey, AssociationUsage],
    shares: dict[AssocKey, float],
) -> None:
    """The association rows of `state`, in write_touched's order, with their `usage` and
    fair-share (usage_then gives every association's)."""
    names = (*ASSOCIATION_COLUMNS, *USAGE_COLUMNS)
    rows = []
    for assoc in associations_in_order(state, state.associations):
        key = (assoc.username, assoc.bank)
        rows.append((*association_row(state, assoc), usage[key].usage, shares[key]))
    memory.executemany(
        f"INSERT INTO association_table ({', '.join(names)}) "
        f"VALUES ({', '.join('?' * len(names))})",
        rows,
    )
