"""`fairledger demo`: a small site built and run as an administrator and the accounting cron
would, on a fresh ledger, then its tree printed."""

from __future__ import annotations

import random
import time
from typing import Any

import click

from cli import admin, audit, banks, usage
from cli.ingest_output import shown_notes, summary
from cli.params import AsOf
from cli.session import session
from ledger.clock import iso
from ledger.usecases.ingest import ingest

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
    type=click.IntRange(2, 52),
    default=3,
    show_default=True,
    help="Weeks of generated jobs.",
)
@click.option("--seed", type=int, default=7, show_default=True)
@click.pass_context
def demo(ctx: click.Context, weeks: int, seed: int) -> None:
    """Build a small site on a new ledger, run its weekly accounting over generated jobs
    (ingest, update-fshare, an allocation change), and show the tree today and a week ago,
    and one association's history."""
    s = session(ctx)
    now = s.now if s.now is not None else time.time()
    start = now - weeks * WEEK
    s.create_ledger(WEEK, 4 * WEEK, 0.5, now=start, actor=s.actor, reason="demo site")
    click.echo(f"created a demo ledger at {s.store.describe()}")
    s.change(lambda site, st: _build_site(site, st), reason="demo site")
    users = [
        (u, leaf) for group in TREE.values() for leaf, members in group.items() for u in members
    ]
    rng = random.Random(seed)
    for week in range(1, weeks + 1):
        week_end = now if week == weeks else start + week * WEEK
        s.set_now(week_end)
        click.echo(f"\n# week {week}: the accounting cron at {iso(week_end)}")
        if week == 2:
            click.echo("$ fairledger edit-bank cs --shares 40 --reason 'cs allocation doubled'")
            s.change(
                lambda site, st: site.edit_bank(st, "cs", shares=40), reason="cs allocation doubled"
            )
            click.echo(
                "$ fairledger edit-user alice --max-running-jobs 10 --reason 'paper deadline'"
            )
            s.change(
                lambda site, st: site.edit_user(st, "alice", None, {"max_running_jobs": 10}),
                reason="paper deadline",
            )
        records = _generate_jobs(users, week_end - WEEK, week_end, rng, first_id=week * 10000)
        click.echo(f"$ fairledger ingest week{week}.jsonl")
        with shown_notes(f"week{week}.jsonl: ") as notes:
            result = ingest(
                s, iter(records), f"week{week}.jsonl", "jsonl", reason="demo jobs", notes=notes
            )
        summary(result)
        click.echo("$ fairledger update-fshare")
        ctx.invoke(usage.update_fshare, actor=None, reason=None)
    tree = {
        "bank": "root",
        "tree": True,
        "users": False,
        "parsable": False,
        "active_only": False,
        "as_json": False,
        "fmt": None,
        "fields": None,
    }
    click.echo("\n$ fairledger view-bank root --tree --as-of 1w")
    ctx.invoke(banks.view_bank, as_of=AsOf(ago=WEEK), **tree)
    click.echo("$ fairledger view-bank root --tree")
    ctx.invoke(banks.view_bank, as_of=None, **tree)
    click.echo("$ fairledger history --user alice")
    ctx.invoke(
        audit.history,
        bank=None,
        user="alice",
        queue=None,
        project=None,
        config=False,
        all_=False,
        since=None,
        until=None,
        as_json=False,
    )
    click.echo("$ fairledger verify")
    ctx.invoke(admin.verify)


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


def _generate_jobs(
    users: list[tuple[str, str]], start: float, end: float, rng: random.Random, first_id: int
) -> list[dict[str, Any]]:
    """A week of jobs of uneven appetite: a few heavy users, most light (in memory: a temporary
    file would outlive a killed demo)."""
    appetite = {user: (12 if user in ("ivan", "frank") else 1) for user, _ in users}
    records = []
    for job_id in range(first_id, first_id + 500):
        user, bank = rng.choice(users)
        nodes = rng.choice([1, 1, 2, 4, 8]) * appetite[user]
        t_run = rng.uniform(start, end - 3600)
        t_inactive = min(end - 1, t_run + rng.uniform(60, 6 * 3600))
        record = {
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
        records.append(record)
    return records


COMMANDS = [demo]
