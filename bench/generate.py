"""Generated benchmark data: a 3-level bank tree with its associations, and completed jobs.

Deterministic for a given seed. The site is built through the Python API (a few large
`Ledger.execute` calls, so set-up takes seconds, not one CLI process per user); the jobs are
written as JSON lines in the design's §5 record shape, for the real `fairledger ingest`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from ledger.site import Site, Stamp
from ledger.store.application import Ledger
from ledger.store.connections import Connection, parse_store_url
from projections.writers import runner

WEEK = 7 * 24 * 3600.0
# 2026-01-01T00:00:00Z: the ledger's epoch (create-db runs with --now EPOCH).
EPOCH = 1_767_225_600.0
ROOT = "root"
USERS_PER_LEAF = 20  # 10k associations -> 500 leaf banks
LEAVES_PER_TOP = 25  # 500 leaf banks -> 20 top-level banks
SECOND_ASSOCIATION_SHARE = 0.10  # this share of associations is a user's second bank
FIRST_USERID = 10_000


@dataclass(frozen=True)
class BankSpec:
    name: str
    parent: str
    shares: int


@dataclass(frozen=True)
class AssocSpec:
    username: str
    bank: str
    userid: int
    shares: int


@dataclass(frozen=True)
class SiteSpec:
    banks: list[BankSpec]  # parents before children
    associations: list[AssocSpec]  # a user's first association (its default bank) first

    @property
    def leaf_banks(self) -> int:
        return sum(1 for b in self.banks if b.parent and b.parent != ROOT)

    @property
    def top_banks(self) -> int:
        return sum(1 for b in self.banks if b.parent == ROOT)


def site_spec(n_associations: int, seed: int = 1) -> SiteSpec:
    """root -> ~A/500 banks -> ~A/20 leaf banks -> A associations (about 10% of them a
    user's second association, in another leaf bank)."""
    rng = random.Random(seed)
    n_leaves = max(1, round(n_associations / USERS_PER_LEAF))
    n_top = max(1, round(n_leaves / LEAVES_PER_TOP))
    banks = [BankSpec(ROOT, "", 1)]
    tops = [BankSpec(f"bank{t:02d}", ROOT, rng.randint(1, 10)) for t in range(n_top)]
    banks += tops
    leaves = [
        BankSpec(f"{tops[i % n_top].name}_g{i:03d}", tops[i % n_top].name, rng.randint(1, 10))
        for i in range(n_leaves)
    ]
    banks += leaves
    n_second = int(n_associations * SECOND_ASSOCIATION_SHARE) if n_leaves > 1 else 0
    n_users = n_associations - n_second
    assocs: list[AssocSpec] = []
    for u in range(n_users):
        bank = leaves[u % n_leaves].name
        assocs.append(AssocSpec(f"user{u:05d}", bank, FIRST_USERID + u, rng.randint(1, 4)))
    taken = {(a.username, a.bank) for a in assocs}
    while len(assocs) < n_associations:
        first = assocs[rng.randrange(n_users)]
        bank = leaves[rng.randrange(n_leaves)].name
        if (first.username, bank) in taken:
            continue
        taken.add((first.username, bank))
        assocs.append(AssocSpec(first.username, bank, first.userid, rng.randint(1, 4)))
    return SiteSpec(banks=banks, associations=assocs)


def populate(url: str, spec: SiteSpec) -> tuple[int, str]:
    """The site of `spec` recorded, through the Python API, in the ledger create-db made at
    `url`: (how many transactions it took, the site's time zone)."""
    store = parse_store_url(url)
    conn = Connection(store)
    ledger = Ledger.open(store, now=EPOCH, actor="bench", conn=conn)
    try:
        runner.attach(ledger)
        runner.prepare(conn, ledger)
        return build_site(ledger, spec), ledger.state().timezone
    finally:
        conn.close()
        ledger.close()


def build_site(ledger: Ledger, spec: SiteSpec, chunk: int = 2500) -> int:
    """Record the bank tree and the associations: one `execute` (one transaction) for the
    banks, then one per `chunk` associations. Returns how many transactions were made."""

    def add_banks(site: Site, stamp: Stamp) -> None:
        for bank in spec.banks:
            site.add_bank(stamp, bank.name, bank.shares, bank.parent, None)

    ledger.execute(add_banks, reason="bench: bank tree")
    transactions = 1
    for start in range(0, len(spec.associations), chunk):
        part = spec.associations[start : start + chunk]

        def add_users(site: Site, stamp: Stamp, part: list[AssocSpec] = part) -> None:
            for a in part:
                site.add_user(stamp, a.username, a.bank, a.userid, {"shares": a.shares})

        ledger.execute(add_users, reason="bench: associations")
        transactions += 1
    return transactions


@dataclass(frozen=True)
class DrawnJob:
    pick: int  # the index of its association in SiteSpec.associations
    t_submit: float
    t_run: float
    t_inactive: float
    nnodes: int
    ncores: int
    mode: float  # in [0, 1): how its JSON line names its user


def _drawn_jobs(
    spec: SiteSpec, n_jobs: int, t_lo: float, t_hi: float, seed: int
) -> Iterator[DrawnJob]:
    """The generated jobs, in t_inactive order."""
    rng = random.Random(seed)
    assocs = spec.associations
    # Activity is skewed: a few associations run most of the jobs (Pareto weights).
    weights = [rng.paretovariate(1.2) for _ in assocs]
    picks = rng.choices(range(len(assocs)), weights=weights, k=n_jobs)
    ends = sorted(rng.uniform(t_lo, t_hi) for _ in range(n_jobs))
    node_counts = (1, 1, 1, 1, 2, 2, 4, 8, 16, 32)
    for pick, t_inactive in zip(picks, ends, strict=True):
        duration = min(2 * 86400.0, math.exp(rng.gauss(7.5, 1.5)))  # median ~30 min
        t_run = t_inactive - duration
        t_submit = t_run - rng.expovariate(1 / 600.0)
        nnodes = node_counts[rng.randrange(len(node_counts))]
        ncores = nnodes * 32 if nnodes > 1 else rng.randint(1, 32)
        yield DrawnJob(pick, t_submit, t_run, t_inactive, nnodes, ncores, rng.random())


def _job_lines(
    spec: SiteSpec, n_jobs: int, first_id: int, t_lo: float, t_hi: float, seed: int
) -> Iterator[tuple[float, str]]:
    """(t_inactive, JSON line) of each job, in t_inactive order."""
    for n, job in enumerate(_drawn_jobs(spec, n_jobs, t_lo, t_hi, seed)):
        a = spec.associations[job.pick]
        # How the job names its user: mostly username + bank, sometimes only part of it
        # (the ledger resolves the default bank, or the user from the userid).
        if job.mode < 0.70:
            who = f'"username":"{a.username}","bank":"{a.bank}"'
        elif job.mode < 0.85:
            who = f'"username":"{a.username}"'
        elif job.mode < 0.95:
            who = f'"userid":{a.userid},"bank":"{a.bank}"'
        else:
            who = f'"userid":{a.userid}'
        yield (
            job.t_inactive,
            f'{{"id":{first_id + n},{who},"t_submit":{job.t_submit:.3f},"t_run":{job.t_run:.3f},'
            f'"t_inactive":{job.t_inactive:.3f},"nnodes":{job.nnodes},"ncores":{job.ncores}}}\n',
        )


def write_jobs(
    paths: list[str],
    spec: SiteSpec,
    n_jobs: int,
    first_id: int,
    t_lo: float,
    t_hi: float,
    seed: int = 2,
) -> int:
    """Write `n_jobs` completed jobs, ids from `first_id`, ending (t_inactive) uniformly in
    [t_lo, t_hi), in t_inactive order, split over `paths` by equal slices of that time range
    (one file per week for a weekly cron). Returns the files' total size in bytes."""
    size = 0
    span = (t_hi - t_lo) / len(paths)
    files = [open(path, "w", encoding="utf-8") for path in paths]  # noqa: SIM115
    try:
        buffers: list[list[str]] = [[] for _ in paths]
        for t_inactive, line in _job_lines(spec, n_jobs, first_id, t_lo, t_hi, seed):
            index = min(len(paths) - 1, int((t_inactive - t_lo) // span))
            buffers[index].append(line)
            if len(buffers[index]) >= 10_000:
                text = "".join(buffers[index])
                size += len(text)
                files[index].write(text)
                buffers[index] = []
        for out, buffer in zip(files, buffers, strict=True):
            text = "".join(buffer)
            size += len(text)
            out.write(text)
    finally:
        for out in files:
            out.close()
    return size


SACCT_COLUMNS = "JobIDRaw Cluster User UID Account Partition QOS Submit Start End NNodes NCPUS"
SACCT_HEADER = "|".join([*SACCT_COLUMNS.split(), "AllocTRES", "State"]) + "\n"


def write_sacct_jobs(
    path: str,
    spec: SiteSpec,
    n_jobs: int,
    first_id: int,
    t_lo: float,
    t_hi: float,
    cluster: str,
    seed: int = 3,
) -> int:
    """Write `n_jobs` ended jobs as `sacct -a -X -P` prints them (times in UTC, the site's zone
    by default), for `ingest --format sacct`: the same jobs `write_jobs` draws, as a Slurm site
    would send them. Returns the file's size in bytes."""
    size = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(SACCT_HEADER)
        size += len(SACCT_HEADER)
        rows: list[str] = []
        for n, job in enumerate(_drawn_jobs(spec, n_jobs, t_lo, t_hi, seed)):
            a = spec.associations[job.pick]
            rows.append(
                f"{first_id + n}|{cluster}|{a.username}|{a.userid}|{a.bank}|batch|normal|"
                f"{_sacct_time(job.t_submit)}|{_sacct_time(job.t_run)}|"
                f"{_sacct_time(job.t_inactive)}|{job.nnodes}|{job.ncores}|"
                f"billing={job.ncores},cpu={job.ncores},mem={job.ncores * 4}G,node={job.nnodes}|"
                "COMPLETED\n"
            )
            if len(rows) >= 10_000:
                text = "".join(rows)
                size += len(text)
                out.write(text)
                rows = []
        text = "".join(rows)
        size += len(text)
        out.write(text)
    return size


def _sacct_time(epoch: float) -> str:
    return datetime.fromtimestamp(round(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%S")
