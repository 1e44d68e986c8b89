"""The demo's made-up site (three departments, six groups, twelve users, four queues) and the
jobs it runs in a week: a few heavy users, most light."""

from __future__ import annotations

import random
from typing import Any

from ledger.site import Site, Stamp

TREE = {
    "physics": {"theory": ["alice", "bob"], "astro": ["carol", "dave", "erin"]},
    "chemistry": {"organic": ["frank", "grace"], "materials": ["heidi"]},
    "cs": {"ml": ["ivan", "judy", "mallory"], "systems": ["niaj"]},
}
SHARES = {
    "physics": 50,
    "chemistry": 30,
    "cs": 20,
    "theory": 1,
    "astro": 2,
    "organic": 3,
    "materials": 1,
    "ml": 2,
    "systems": 1,
}
QUEUES = {"standby": -10, "batch": 0, "debug": 100, "expedite": 10000}
HEAVY_USERS = {"ivan": 12, "frank": 12}  # how many times a light user's nodes they ask for
FIRST_UID = 5001
JOBS_PER_WEEK = 500


def members() -> list[tuple[str, str]]:
    """Every (user, group bank), in the tree's order."""
    return [(u, leaf) for group in TREE.values() for leaf, users in group.items() for u in users]


def build_site(site: Site, stamp: Stamp) -> None:
    """The queues, the bank tree under root, and one association per user in its group."""
    for name, priority in QUEUES.items():
        site.add_queue(stamp, name, {"priority": priority})
    site.add_bank(stamp, "root", 1, "", None)
    uid = FIRST_UID
    for dept, groups in TREE.items():
        site.add_bank(stamp, dept, SHARES[dept], "root", None)
        for group, users in groups.items():
            site.add_bank(stamp, group, SHARES[group], dept, None)
            for user in users:
                site.add_user(
                    stamp, user, group, uid, {"queues": "standby,batch,debug", "shares": 1}
                )
                uid += 1


def week_of_jobs(
    users: list[tuple[str, str]], start: float, end: float, rng: random.Random, first_id: int
) -> list[dict[str, Any]]:
    """A week of jobs of uneven appetite, as ingest records (kept in memory: a temporary file
    would outlive a killed demo)."""
    records = []
    for job_id in range(first_id, first_id + JOBS_PER_WEEK):
        user, bank = rng.choice(users)
        nodes = rng.choice([1, 1, 2, 4, 8]) * HEAVY_USERS.get(user, 1)
        t_run = rng.uniform(start, end - 3600)
        t_inactive = min(end - 1, t_run + rng.uniform(60, 6 * 3600))
        records.append(
            {
                "id": job_id,
                "username": user,
                "bank": bank,
                "queue": rng.choice(["standby", "batch", "debug"]),
                "t_submit": t_run - rng.uniform(0, 600),
                "t_run": t_run,
                "t_inactive": t_inactive,
                "nnodes": nodes,
                "ncores": nodes * 32,
            }
        )
    return records
