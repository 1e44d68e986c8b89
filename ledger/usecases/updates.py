"""update-usage and update-fshare: usage (and fair-share) brought up to date at the ledger's
time. Each records a marker alone (ledger.events.MARKERS), which the projector folds into the
read models' columns and checkpoint; the state changes only in its update times, so the command
is run as markers-only (Ledger.execute: the projector shares the state's tables)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ledger.site import Site, Stamp
from ledger.usecases.session import Session

Marker = Callable[[Site, Stamp], None]


def update_usage(s: Session, actor: str | None = None, reason: str | None = None) -> datetime:
    """Every association's decayed usage at now; returns the update's time."""
    return _marked(s, (Site.mark_usage_updated,), actor, reason)


def update_fairshare(s: Session, actor: str | None = None, reason: str | None = None) -> datetime:
    """Usage brought up to date and fair-share recomputed at now; returns the update's time."""
    return _marked(s, (Site.mark_fairshare_updated,), actor, reason)


def update_both(s: Session, actor: str | None = None, reason: str | None = None) -> datetime:
    """update-usage then update-fshare, in one transaction at one time (a cron cycle's)."""
    return _marked(s, (Site.mark_usage_updated, Site.mark_fairshare_updated), actor, reason)


def _marked(
    s: Session, markers: tuple[Marker, ...], actor: str | None, reason: str | None
) -> datetime:
    """Record `markers`, in turn, in one markers-only command; returns its time."""

    def mark(site: Site, stamp: Stamp) -> datetime:
        for marker in markers:
            marker(site, stamp)
        return stamp.at

    return s.change(mark, reason, actor, markers_only=True)
