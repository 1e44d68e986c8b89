"""`fairledger demo`: a small site built and run on a new ledger as an administrator and the
accounting cron would, week by week (ingest, update-fshare, an allocation change), then its
tree a week ago and today and one association's history; then a Slurm site in a ledger of its
own beside it (`slurm_store`): its `sacctmgr dump` imported, billing weights, a week of sacct
jobs, update-fshare, and sshare under Fair Tree and previewed under classic.

The run is a transcript: `run_demo` yields each command as it is about to run (`Running`),
then what it returned, so that a front end shows them in the order they happen."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ledger.clock import AsOf, real_now
from ledger.errors import AlreadyExists, LedgerMissing
from ledger.site_config import CLASSIC, FAIR_TREE, TIMEZONE_KEY
from ledger.store.connections import SCHEMA_NAME_LENGTH, StoreConfig
from ledger.usecases import demo_slurm
from ledger.usecases.admin import VerifyReport, verify
from ledger.usecases.demo_site import build_site, members, week_of_jobs
from ledger.usecases.ingest import IngestResult, ingest
from ledger.usecases.priority_audit import JobAudit
from ledger.usecases.reports import explain, explain_slurm
from ledger.usecases.session import Session
from ledger.usecases.slurm_import import Imported, import_source, parse_source
from ledger.usecases.sprio import SprioAnswer, SprioRequest, sprio
from ledger.usecases.sshare import SshareRequest, sshare
from ledger.usecases.updates import update_fairshare
from projections.queries import history as history_view
from projections.queries import site as site_queries
from projections.queries.explain import Explanation
from projections.queries.sshare import SshareAnswer

WEEK = 7 * 86400
DEMO_REASON = "demo site"
JOBS_REASON = "demo jobs"
SHOWN_USER = "alice"  # whose history the demo ends with: her limit changes in week 2
TOP_BANK = "root"
SLURM_SUFFIX = "slurm"  # demo/fairledger.db -> demo/fairledger-slurm.db; schema s -> s_slurm
SLURM_REASON = "demo Slurm site"


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


@dataclass(frozen=True)
class Verified:
    report: VerifyReport


@dataclass(frozen=True)
class SlurmSection:
    """The Slurm site's part of the run: its own ledger at `where`, its cron's time `at`."""

    where: str
    at: float


@dataclass(frozen=True)
class SlurmImported:
    report: dict[str, Any]  # import-slurm's report


@dataclass(frozen=True)
class Sshare:
    answer: SshareAnswer  # sshare -a -l


@dataclass(frozen=True)
class Sprio:
    answer: SprioAnswer  # sprio -l of the pending jobs


@dataclass(frozen=True)
class SlurmExplained:
    explanation: Explanation  # explain-job of a recorded job
    audit: JobAudit


Step = (
    LedgerMade
    | Section
    | Running
    | JobsIngested
    | FairshareUpdated
    | BankTree
    | History
    | Verified
    | SlurmSection
    | SlurmImported
    | Sshare
    | Sprio
    | SlurmExplained
)


def slurm_store(store: StoreConfig) -> StoreConfig:
    """Where the demo's Slurm site lives, beside the Flux one: the SQLite file's name with
    `-slurm` before its extension, or the PostgreSQL schema's name with `_slurm` (cut to
    PostgreSQL's 63 characters)."""
    if store.is_postgres:
        suffix = f"_{SLURM_SUFFIX}"
        kept = SCHEMA_NAME_LENGTH - len(suffix)
        return dataclasses.replace(store, schema=store.schema[:kept] + suffix)
    stem, extension = os.path.splitext(store.path)
    return dataclasses.replace(store, path=f"{stem}-{SLURM_SUFFIX}{extension}")


def run_demo(s: Session, weeks: int, seed: int) -> Iterator[Step]:
    """Build the demo site on a new ledger at `s` and run `weeks` weeks of its accounting, the
    last ending now; jobs drawn with `seed` (valid, new and few: their ingest has nothing to
    note on the way). Then the Slurm site on a new ledger at `slurm_store(s.store)`.
    AlreadyExists if either store holds a ledger."""
    now = s.now if s.now is not None else real_now()
    start = now - weeks * WEEK
    slurm = Session(slurm_store(s.store), None, s.warn)
    try:
        _check_empty(slurm)  # before anything is written, so a second run writes nothing
        yield from _run_flux_site(s, now, start, weeks, seed)
        yield from run_slurm_site(slurm, now, seed)
    finally:
        slurm.close()


def _run_flux_site(s: Session, now: float, start: float, weeks: int, seed: int) -> Iterator[Step]:
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
        yield FairshareUpdated(update_fairshare(s))
    yield Section()
    yield Running(f"view-bank {TOP_BANK} --tree --as-of 1w")
    yield bank_tree(s, TOP_BANK, AsOf(ago=WEEK))
    yield Running(f"view-bank {TOP_BANK} --tree")
    yield bank_tree(s, TOP_BANK)
    yield Running(f"history --user {SHOWN_USER}")
    yield History(
        history_view.read_history(s.ledger, s.read(), history_view.Selector("user", SHOWN_USER))
    )
    yield Running("verify")
    yield Verified(verify(s))


def _check_empty(s: Session) -> None:
    try:
        s.ledger  # noqa: B018 (opening it finds a ledger there, or LedgerMissing)
    except LedgerMissing:
        return
    raise AlreadyExists(f"a ledger already exists at {s.store.describe()}")


def run_slurm_site(s: Session, now: float, seed: int) -> Iterator[Step]:
    """The Slurm site, on a new ledger at `s`: created under Fair Tree a week before `now`, its
    tree imported from a dump, billing weights on its partitions; at `now` a week of its jobs
    from sacct, update-fshare, sshare, the same tree previewed under classic, and the policy's
    history."""
    created = now - WEEK
    yield SlurmSection(s.store.describe(), now)
    yield Running(f"create-db --fairshare-algorithm {FAIR_TREE}")
    s.create_ledger(
        WEEK,
        4 * WEEK,
        0.5,
        now=created,
        actor=s.actor,
        reason=SLURM_REASON,
        fairshare_algorithm=FAIR_TREE,
    )
    yield LedgerMade(s.store.describe())
    s.set_now(created)
    yield Running(f"edit-config {TIMEZONE_KEY}={demo_slurm.TIMEZONE}")
    s.change(
        lambda site, st: site.edit_config(st, [(TIMEZONE_KEY, demo_slurm.TIMEZONE)]),
        reason=SLURM_REASON,
    )
    yield Running(f"import-slurm {demo_slurm.DUMP_NAME} --conf {demo_slurm.CONF_NAME}")
    source = parse_source(
        demo_slurm.DUMP_NAME,
        demo_slurm.DUMP.encode(),
        conf_path=demo_slurm.CONF_NAME,
        conf_bytes=demo_slurm.CONF.encode(),
    )
    outcome = import_source(s, source, reason=SLURM_REASON)
    if isinstance(outcome, Imported):  # always: the ledger is new
        yield SlurmImported(outcome.report)
    s.set_now(now)
    lines = demo_slurm.week_of_sacct(created, now, seed)
    yield Running(f"ingest --format sacct {demo_slurm.SACCT_NAME}")
    yield JobsIngested(ingest(s, iter(lines), demo_slurm.SACCT_NAME, "sacct", reason=JOBS_REASON))
    yield Running("update-fshare")
    yield FairshareUpdated(update_fairshare(s))
    yield Running("sshare -a -l")
    yield Sshare(sshare(s, SshareRequest(all_users=True)))
    yield Running(f"sshare -a -l --algorithm {CLASSIC}")
    yield Sshare(sshare(s, SshareRequest(all_users=True, algorithm=CLASSIC)))
    yield Running(f"sprio -l --jobs {demo_slurm.PENDING_NAME}")
    pending = SprioRequest(jobs_text=demo_slurm.pending_jobs(now))
    yield Sprio(sprio(s, pending))
    explained = int(lines[1].split("|")[0])  # the week's first job
    yield Running(f"explain-job {explained}")
    found = explain(s, explained, None, shown=str(explained))
    audit = explain_slurm(s, found)
    if isinstance(audit, JobAudit):  # always: the site is a Slurm one
        yield SlurmExplained(found, audit)
    yield Running("history --config")
    yield History(history_view.read_history(s.ledger, s.read(), history_view.Selector("config")))
    yield Running("verify")
    yield Verified(verify(s))


def _reallocate(s: Session) -> Iterator[Step]:
    """Week 2's changes: an allocation doubled, a limit raised for a deadline."""
    yield Running("edit-bank cs --shares 40 --reason 'cs allocation doubled'")
    s.change(lambda site, st: site.edit_bank(st, "cs", shares=40), reason="cs allocation doubled")
    yield Running("edit-user alice --max-running-jobs 10 --reason 'paper deadline'")
    s.change(
        lambda site, st: site.edit_user(st, "alice", None, {"max_running_jobs": 10}),
        reason="paper deadline",
    )


def bank_tree(s: Session, top: str, as_of: AsOf | None = None) -> BankTree:
    """`top`'s hierarchy as view-bank --tree reads it (as it stood at `as_of`, if given)."""
    conn = s.read(as_of)
    banks = site_queries.subtree_banks(conn, top)
    return BankTree(top, banks, site_queries.users_in(conn, [b["bank"] for b in banks]))
