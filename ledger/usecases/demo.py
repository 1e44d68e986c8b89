"""`fairledger demo`: a small site built and run on a new ledger as an administrator and the
accounting cron would, week by week (ingest, update-fshare, an allocation change), then its
tree a week ago and today and one association's history.

The run is a transcript: `run_demo` yields each command as it is about to run (`Running`),
then what it returned, so that a front end shows them in the order they happen."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ledger.clock import AsOf, real_now
from ledger.site import Site, Stamp
from ledger.usecases.demo_site import build_site, members, week_of_jobs
from ledger.usecases.ingest import IngestResult, ingest
from ledger.usecases.session import Session
from projections.queries import history as history_view
from projections.queries import site as site_queries

WEEK = 7 * 86400
DEMO_REASON = "demo site"
JOBS_REASON = "demo jobs"
SHOWN_USER = "alice"  # whose history the demo ends with: her limit changes in week 2
TOP_BANK = "root"


@dataclass(frozen=True)
class LedgerMade:
    where: str  # the store, as it describes itself


@dataclass(frozen=True)
class Section:
    """A part of the run: a week's accounting (`week`, its cron's time `at`), or, with neither,
    the views that close it."""

    week: int | None = None
    at: float | None = None


@dataclass(frozen=True)
class Running:
    command: str  # the fairledger command line an administrator would type


@dataclass(frozen=True)
class JobsIngested:
    result: IngestResult


@dataclass(frozen=True)
class FairshareUpdated:
    at: datetime


@dataclass(frozen=True)
class BankTree:
    """`top` and every bank under it, with their associations: what view-bank --tree prints."""

    top: str
    banks: list[dict[str, Any]]
    members: list[dict[str, Any]]


@dataclass(frozen=True)
class History:
    entries: list[history_view.Entry]


Step = LedgerMade | Section | Running | JobsIngested | FairshareUpdated | BankTree | History


def run_demo(s: Session, weeks: int, seed: int) -> Iterator[Step]:
    """Build the demo site on a new ledger at `s` (AlreadyExists if one is there) and run
    `weeks` weeks of its accounting, the last ending now; jobs drawn with `seed` (valid, new
    and few: their ingest has nothing to note on the way)."""
    now = s.now if s.now is not None else real_now()
    start = now - weeks * WEEK
    s.create_ledger(WEEK, 4 * WEEK, 0.5, now=start, actor=s.actor, reason=DEMO_REASON)
    yield LedgerMade(s.store.describe())
    s.change(build_site, reason=DEMO_REASON)
    users = members()
    rng = random.Random(seed)
    for week in range(1, weeks + 1):
        week_end = now if week == weeks else start + week * WEEK
        s.set_now(week_end)
        yield Section(week, week_end)
        if week == 2:
            yield from _reallocate(s)
        records = week_of_jobs(users, week_end - WEEK, week_end, rng, first_id=week * 10000)
        name = f"week{week}.jsonl"
        yield Running(f"ingest {name}")
        yield JobsIngested(ingest(s, iter(records), name, "jsonl", reason=JOBS_REASON))
        yield Running("update-fshare")
        yield FairshareUpdated(s.change(_update_fairshare))
    yield Section()
    yield Running(f"view-bank {TOP_BANK} --tree --as-of 1w")
    yield bank_tree(s, TOP_BANK, AsOf(ago=WEEK))
    yield Running(f"view-bank {TOP_BANK} --tree")
    yield bank_tree(s, TOP_BANK)
    yield Running(f"history --user {SHOWN_USER}")
    yield History(
        history_view.read_history(s.ledger, s.read(), history_view.Selector("user", SHOWN_USER))
    )


def _reallocate(s: Session) -> Iterator[Step]:
    """Week 2's changes: an allocation doubled, a limit raised for a deadline."""
    yield Running("edit-bank cs --shares 40 --reason 'cs allocation doubled'")
    s.change(lambda site, st: site.edit_bank(st, "cs", shares=40), reason="cs allocation doubled")
    yield Running("edit-user alice --max-running-jobs 10 --reason 'paper deadline'")
    s.change(
        lambda site, st: site.edit_user(st, "alice", None, {"max_running_jobs": 10}),
        reason="paper deadline",
    )


def _update_fairshare(site: Site, stamp: Stamp) -> datetime:
    """What update-fshare does: usage brought up to date and fair-share recomputed, at now."""
    site.mark_fairshare_updated(stamp)
    return stamp.at


def bank_tree(s: Session, top: str, as_of: AsOf | None = None) -> BankTree:
    """`top`'s hierarchy as view-bank --tree reads it (as it stood at `as_of`, if given)."""
    conn = s.read(as_of)
    banks = site_queries.subtree_banks(conn, top)
    return BankTree(top, banks, site_queries.users_in(conn, [b["bank"] for b in banks]))
