"""`fairledger demo`: a small site built and run as an administrator and the accounting cron
would, on a fresh ledger, then its tree printed."""

from __future__ import annotations

import json
import os
import random
import tempfile
import time

import click

from cli import banks, jobs, usage
from cli.session import session
from ledger.app import Ledger

WEEK = 7 * 86400
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


@click.command("demo")
@click.option(
    "--weeks",
    type=click.IntRange(1, 52),
    default=3,
    show_default=True,
    help="Weeks of generated jobs.",
)
@click.option("--seed", type=int, default=7, show_default=True)
@click.pass_context
def demo(ctx: click.Context, weeks: int, seed: int) -> None:
    """Build a small site on a new ledger, ingest generated jobs, update usage and
    fair-share, and print the tree."""
    s = session(ctx)
    now = s.now if s.now is not None else time.time()
    start = now - weeks * WEEK
    s.adopt(
        Ledger.create(s.store, WEEK, 4 * WEEK, 0.5, now=start, actor=s.actor, reason="demo site")
    )
    click.echo(f"created a demo ledger at {s.store.describe()}")
    s.change(lambda site, st: _build_site(site, st), reason="demo site")
    users = [
        (u, leaf) for group in TREE.values() for leaf, members in group.items() for u in members
    ]
    path = _generate_jobs(users, start, now, seed)
    s.set_now(now)
    try:
        click.echo(f"\n$ fairledger ingest {os.path.basename(path)}")
        ctx.invoke(
            jobs.ingest,
            source=path,
            fmt="jsonl",
            skip_invalid=False,
            actor=None,
            reason="demo jobs",
        )
    finally:
        os.unlink(path)
    click.echo("\n$ fairledger update-fshare")
    ctx.invoke(usage.update_fshare, actor=None, reason=None)
    click.echo("\n$ fairledger view-bank root --tree")
    ctx.invoke(
        banks.view_bank,
        bank="root",
        tree=True,
        users=False,
        parsable=False,
        active_only=False,
        as_json=False,
        fmt=None,
        fields=None,
    )


def _build_site(site, stamp):  # type: ignore[no-untyped-def]
    for name, priority in QUEUES.items():
        site.add_queue(stamp, name, {"priority": priority})
    site.add_bank(stamp, "root", 1, "", None)
    uid = 5000
    for dept, groups in TREE.items():
        site.add_bank(stamp, dept, SHARES[dept], "root", None)
        for group, members in groups.items():
            site.add_bank(stamp, group, SHARES[group], dept, None)
            for user in members:
                uid += 1
                site.add_user(
                    stamp, user, group, uid, {"queues": "standby,batch,debug", "shares": 1}
                )


def _generate_jobs(users: list[tuple[str, str]], start: float, end: float, seed: int) -> str:
    """Jobs of uneven appetite: a few heavy users, most light, spread over the weeks."""
    rng = random.Random(seed)
    appetite = {user: rng.choice([1, 1, 2, 4, 12]) for user, _ in users}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        for job_id in range(1, 1501):
            user, bank = rng.choice(users)
            nodes = rng.choice([1, 1, 2, 4, 8]) * appetite[user]
            t_run = rng.uniform(start, end - 3600)
            t_inactive = min(end - 1, t_run + rng.uniform(60, 6 * 3600))
            handle.write(
                json.dumps(
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
                + "\n"
            )
    return handle.name


COMMANDS = [demo]
