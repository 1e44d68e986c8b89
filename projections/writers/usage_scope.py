"""The users each scoped change can move the usage of (ledger.usage_effects.usage_scope), kept
by log position, so that the next update recomputes those users' usage from all their jobs and
carries every other association's (usage_tables.plan_usage, continuous_state.update).

Two kinds of rows: a username (userid NULL) and a userid (username NULL), whose users are the
ones holding it when the update runs. Holding a userid only grows between two updates while
every change in between is scoped (a removal or a new userid is not: it recomputes everyone),
so the users holding it then include every user that held it in between.

`Who` is the SQL condition for the job identities that can name some users, for reading only
their jobs or period totals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledger.state import SiteState
from ledger.store.connections import Connection
from ledger.usage_effects import UsageScope

# Users per statement when usage is recomputed for some of them: their names and userids are
# its values, which both stores bound (SQLite at 32,766).
USERS_PER_QUERY = 1000

TABLES: dict[str, str] = {
    "usage_scope": """
        CREATE TABLE IF NOT EXISTS usage_scope (
            position BIGINT NOT NULL,
            username TEXT,
            userid BIGINT
        )""",
}
INDEXES = ["CREATE INDEX IF NOT EXISTS usage_scope_position_idx ON usage_scope (position)"]


@dataclass(frozen=True)
class Who:
    """Only the job identities that can name some users: one of their usernames, or no
    username and one of the userids their associations hold (a superset of those that resolve
    to them)."""

    usernames: tuple[str, ...]
    userids: tuple[int, ...]

    def clause(self, in_totals: bool = False) -> tuple[str, list[Any]]:
        """The SQL condition and its values, over the jobs (a missing username is NULL) or
        over period_totals (`in_totals`: it is '')."""
        names = ", ".join("?" * len(self.usernames)) or "NULL"
        marks = ", ".join("?" * len(self.userids)) or "NULL"
        missing = "= ''" if in_totals else "IS NULL"
        return (
            f" AND (username IN ({names}) OR (username {missing} AND userid IN ({marks})))",
            [*self.usernames, *self.userids],
        )


def who_of(state: SiteState, usernames: Iterable[str]) -> Who:
    """Who for these users, with the userids their associations hold."""
    names = tuple(usernames)
    userids = {a.userid for name in names for a in state.associations.get(name, {}).values()}
    return Who(names, tuple(sorted(userids)))


def write(conn: Connection, position: int, scope: UsageScope) -> None:
    conn.executemany(
        "INSERT INTO usage_scope (position, username, userid) VALUES (?, ?, ?)",
        [(position, name, None) for name in sorted(scope.usernames)]
        + [(position, None, uid) for uid in sorted(scope.userids)],
    )


def users_between(conn: Connection, state: SiteState, since: int, position: int) -> set[str]:
    """The users whose usage the scoped changes recorded after log position `since` and before
    `position` can have moved."""
    names: set[str] = set()
    userids: set[int] = set()
    for username, userid in conn.rows(
        "SELECT username, userid FROM usage_scope WHERE position > ? AND position < ?",
        (since, position),
    ):
        if username is not None:
            names.add(username)
        else:
            userids.add(int(userid))
    if userids:
        names |= {a.username for a in state.all_associations() if a.userid in userids}
    return names
