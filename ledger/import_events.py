"""Events of bringing a site over from flux-accounting (import-flux-accounting, pop-db) or Slurm
(import-slurm).

They are Site events like those of ledger.events (actor, reason, source; folded by the same
reducers), kept in their own module because the audit's topic list (projections/queries/history.py)
is built from every class of ledger.events and has no audit line for these yet: add them there
when it does. Stored by topic (module:QualName): never rename or move one.
"""

from __future__ import annotations

from typing import Any

from ledger.events import SiteEvent


class UsageBalanceImported(SiteEvent):
    """An opening balance: usage that another system had already accumulated.

    `entries` are [username, bank, at, charge]: a raw charge that counts as if a job of that
    association had ended at time `at` (so it lands in the period holding `at`, whatever the
    half-life, and decays from there like any job). `shown` are [username, bank, job_usage,
    fairshare]: the values the source had stored, shown until the next update-usage
    (job_usage) and update-fshare (fairshare)."""

    entries: list[list[Any]]
    shown: list[list[Any]]


class SiteImported(SiteEvent):
    """The marker of a whole site brought over from a flux-accounting database (or, `schema`
    "sacctmgr dump", from Slurm's dump and sshare files): recorded in the same save as the
    site's objects, so a second import of the same content (same sha256) is recognised and adds
    nothing."""

    file: str
    sha256: str
    schema: str
    counts: dict[str, int]
    fixes: list[str]
    notes: list[str]
