"""Which events of the log are set aside (ledger.events.EventNeutralized), for whoever replays.

A neutralization comes later in the log than the event it sets aside, so a replay must know
them before it reaches that event: it reads the (few) neutralization events of the range it
replays first. Job records are set aside one by one (the others in their batch still count);
a Site event as a whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic

from ledger import events as ev
from ledger.joblog import job_key

TOPIC = get_topic(ev.EventNeutralized)
PAGE = 500


@dataclass
class Neutralizations:
    """Positions set aside whole, and job records set aside by (cluster, id) per position."""

    whole: set[int] = field(default_factory=set)
    jobs: dict[int, set[tuple[str, str]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.whole or self.jobs)

    def add(self, position: int, jobs: Iterable[Iterable[str]] = ()) -> None:
        """Set aside the event at `position`: the given job records of it, or all of it."""
        keys = {(str(c), str(i)) for c, i in jobs}
        if keys:
            self.jobs.setdefault(position, set()).update(keys)
        else:
            self.whole.add(position)

    def honour(self, events: Iterable[Any]) -> None:
        for event in events:
            if isinstance(event, ev.EventNeutralized):
                self.add(event.position, event.jobs)

    def skips(self, position: int) -> bool:
        return position in self.whole

    def kept(self, position: int, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The job records of the batch at `position` that still count."""
        gone = self.jobs.get(position)
        return [r for r in records if job_key(r) not in gone] if gone else records


def in_log(ledger: Any, after: int = 0, through: int | None = None) -> Neutralizations:
    """The neutralizations recorded at positions in (after, through] (default: to the end)."""
    found = Neutralizations()
    start = after
    while through is None or start < through:
        page = ledger.recorder.select_notifications(
            start=start,
            limit=PAGE,
            stop=through,
            topics=[TOPIC],
            inclusive_of_start=False,
        )
        if not page:
            break
        found.honour(ledger.mapper.to_domain_event(n) for n in page)
        start = page[-1].id
    return found


def site_versions_after(recorder: Any, mapper: Any, site_id: UUID, version: int) -> dict[int, int]:
    """Neutralized Site versions -> the version of the Site event that neutralized them, for
    the neutralizations after `version` of the Site stream (the stream's key bounds the read:
    a load at the head reads nothing; only neutralizations are decoded)."""
    out: dict[int, int] = {}
    for stored in recorder.select_events(site_id, gt=version):
        if stored.topic == TOPIC:
            event = mapper.to_domain_event(stored)
            if event.site_version is not None:
                out[int(event.site_version)] = stored.originator_version
    return out
