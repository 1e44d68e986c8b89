"""import-flux-accounting: a flux-accounting site brought over from its database (any schema
version) into an empty ledger, created with the source's decay settings when there is none:
banks in tree order, associations with their limits, queues, projects, factor weights, config,
the stored usage as an opening balance, and the job records through ingest's path. A second
import of the same file adds nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ledger.errors import LedgerMissing
from ledger.flux_accounting.db_import import (
    FIXES,
    FluxSource,
    ImportPlan,
    apply_import,
    job_marker,
    plan_import,
    read_source,
)
from ledger.flux_accounting.jobs_table import flux_job_records
from ledger.site import site_already_held
from ledger.store.application import Ledger
from ledger.usecases.ingest import IngestNotes, record_input
from ledger.usecases.session import Session

COMMAND = "import-flux-accounting"
ALL_FIXES = "all"  # every fix in FIXES


@dataclass(frozen=True)
class AlreadyImported:
    """The file was imported before (at `at`): only its jobs were offered again, exactly once
    (nothing new unless an earlier import stopped before recording them)."""

    file: str
    sha256: str
    at: float
    jobs: dict[str, int]


@dataclass(frozen=True)
class SiteAlreadyHeld:
    """The ledger holds every bank and association of the file already: nothing imported."""

    file: str


@dataclass(frozen=True)
class ImportedMeanwhile:
    """Another import of the same file committed first: nothing imported by this one."""

    file: str


@dataclass(frozen=True)
class Imported:
    """The site came over; `report` says what of the source became what (JSON-ready)."""

    report: dict[str, Any]


ImportOutcome = AlreadyImported | SiteAlreadyHeld | ImportedMeanwhile | Imported


def _ignore(where: str) -> None:
    """Where the note of a created ledger goes when the caller shows none."""


def import_flux_accounting(
    s: Session,
    path: str,
    fixes: Collection[str] = (),
    actor: str | None = None,
    reason: str | None = None,
    created: Callable[[str], None] = _ignore,
    notes: IngestNotes | None = None,
) -> ImportOutcome:
    """Import the flux-accounting database at `path`. `fixes`: names of FIXES (or "all") to
    apply to rows that break a rule of ours; without them such a source is refused row by row.
    `created` hears where a new ledger was created; `notes` the job ingest's."""
    started = time.perf_counter()
    source = read_source(path)
    chosen = set(FIXES) if ALL_FIXES in fixes else set(fixes)
    ledger = _ledger(s)
    imported = ledger.state().imports.get(source.sha256) if ledger is not None else None
    if imported is not None:
        jobs = _import_jobs(s, source, plan_import(source, FIXES), reason, actor, notes)
        return AlreadyImported(source.file, source.sha256, imported["at"], jobs)
    plan = plan_import(source, chosen)
    if ledger is None:
        ledger = _create(s, plan, actor, reason)
        created(s.store.describe())
    elif _holds(ledger, plan):
        return SiteAlreadyHeld(source.file)
    counts = s.change(
        lambda site, stamp: apply_import(site, stamp, plan),
        reason or f"{COMMAND} {source.file}",
        actor,
        source={"import": source.path, "sha256": source.sha256},
    )
    if counts is None:
        return ImportedMeanwhile(source.file)
    jobs = _import_jobs(s, source, plan, reason, actor, notes)
    return Imported(_report(source, plan, counts, jobs, time.perf_counter() - started))


def _ledger(s: Session) -> Ledger | None:
    try:
        return s.ledger
    except LedgerMissing:
        return None


def _create(s: Session, plan: ImportPlan, actor: str | None, reason: str | None) -> Ledger:
    """A new ledger with the source's decay settings (so its periods are cut as the source's)."""
    config = dict(plan.config)
    return s.create_ledger(
        float(config["priority_decay_half_life"]),
        float(config["priority_usage_reset_period"]),
        float(config["decay_factor"]),
        now=s.now,
        actor=actor or s.actor,
        reason=reason or f"{COMMAND} {os.path.basename(plan.file)}",
    )


def _holds(ledger: Ledger, plan: ImportPlan) -> bool:
    """Whether the ledger already has objects; True when it has every bank and association of
    the plan (the site came over already); AlreadyExists when it holds another site."""
    state = ledger.state()
    if not state.banks and not state.associations:
        return False
    if all(b.name in state.banks for b in plan.banks) and all(
        state.association(a.username, a.bank) is not None for a in plan.associations
    ):
        return True
    raise site_already_held(state, COMMAND)


def _import_jobs(
    s: Session,
    source: FluxSource,
    plan: ImportPlan,
    reason: str | None,
    actor: str | None,
    notes: IngestNotes | None,
) -> dict[str, int]:
    """The source's jobs, through ingest's path (validated, spooled, exactly-once); a bad row
    is set aside rather than refusing the site with it. Counts in the report's order."""
    counts = {"source": source.jobs, "recorded": 0, "duplicate": 0, "unmatched": 0}
    counts.update({"matched": 0, "in_balance": 0, "invalid": 0})
    if not source.jobs:
        return counts
    marker = job_marker(plan)

    def mark(record: dict[str, Any]) -> dict[str, Any]:
        marked = marker(record)
        counts["in_balance"] += bool(marked.get("in_balance"))
        return marked

    result = record_input(
        s,
        flux_job_records(source.path),
        source.file,
        origin={"import": source.path, "sha256": source.sha256, "format": "flux-accounting-db"},
        skip_invalid=True,
        actor=actor,
        reason=reason or f"{COMMAND} {source.file}",
        rerun=COMMAND,
        mark=mark,
        against_recorded=False,
        notes=notes,
    )
    counts["recorded"] = result.recorded
    counts["duplicate"] = result.duplicate
    counts["unmatched"] = result.unmatched
    counts["matched"] = result.recorded - result.unmatched
    counts["invalid"] = result.invalid
    if result.conflicting:  # the report names conflicts only when there are some
        counts["conflicting"] = result.conflicting
    return counts


def _report(
    source: FluxSource,
    plan: ImportPlan,
    counts: dict[str, int],
    jobs: dict[str, int],
    seconds: float,
) -> dict[str, Any]:
    return {
        "file": source.path,
        "sha256": source.sha256,
        "schema": source.schema,
        "seconds": round(seconds, 3),
        "objects": {
            "banks": [source.count("bank_table"), counts["banks"], counts["inactive_banks"]],
            "associations": [
                source.count("association_table"),
                counts["associations"],
                counts["inactive_associations"],
            ],
            "queues": [source.count("queue_table"), counts["queues"], 0],
            "projects": [source.count("project_table"), counts["projects"], 0],
            "factor weights": [
                source.count("priority_factor_weight_table"),
                counts["factors"],
                0,
            ],
            "config keys": [source.count("config_table"), counts["config"], 0],
        },
        "balance": {
            "associations": counts["balance_associations"],
            "entries": counts["balance_entries"],
            "periods_elapsed": counts["periods_elapsed"],
        },
        "jobs": jobs,
        "ignored": plan.ignored,
        "fixes": plan.fixes,
        "notes": plan.notes,
    }
