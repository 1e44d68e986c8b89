"""update-usage and update-fshare: usage (and fair-share) brought up to date at the ledger's
time. Each records a marker alone (ledger.events.MARKERS), which the projector folds into the
read models' columns and checkpoint; the state changes only in its update times, so the command
is run as markers-only (Ledger.execute: the projector shares the state's tables)."""

from __future__ import annotations

from datetime import datetime

from ledger.site import Site, Stamp
from ledger.usecases.session import Session


def update_usage(s: Session, actor: str | None = None, reason: str | None = None) -> datetime:
    """Every association's decayed usage at now; returns the update's time."""

    def mark(site: Site, stamp: Stamp) -> datetime:
        site.mark_usage_updated(stamp)
        return stamp.at

    return s.change(mark, reason, actor, markers_only=True)


def update_fairshare(s: Session, actor: str | None = None, reason: str | None = None) -> datetime:
    """Usage brought up to date and fair-share recomputed at now; returns the update's time."""

    def mark(site: Site, stamp: Stamp) -> datetime:
        site.mark_fairshare_updated(stamp)
        return stamp.at

    return s.change(mark, reason, actor, markers_only=True)


def update_both(s: Session, actor: str | None = None, reason: str | None = None) -> datetime:
    """update-usage then update-fshare, in one transaction at one time (a cron cycle's)."""

    def mark(site: Site, stamp: Stamp) -> datetime:
        site.mark_usage_updated(stamp)
        site.mark_fairshare_updated(stamp)
        return stamp.at

    return s.change(mark, reason, actor, markers_only=True)
