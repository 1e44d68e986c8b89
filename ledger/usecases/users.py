"""Adding an association, with the numeric user id the host knows for its user when none is
given (flux-accounting's add-user looks it up the same way)."""

from __future__ import annotations

import pwd
from typing import Any

from ledger.usecases.session import Session


def host_userid(username: str) -> int | None:
    """USERNAME's uid in this host's user database, if it has one."""
    try:
        return pwd.getpwnam(username).pw_uid
    except (KeyError, ValueError):  # ValueError: a NUL in the name, which add-user refuses
        return None


def add_user(
    session: Session,
    username: str,
    bank: str,
    userid: int | None,
    given: dict[str, Any],
    actor: str | None = None,
    reason: str | None = None,
) -> None:
    """USERNAME in BANK, added (or reactivated with the values `given`). Its uid: `userid`,
    else the one the user already has in the ledger, else the host's, else 65534."""
    host_uid = host_userid(username) if userid is None else None
    session.change(
        lambda site, stamp: site.add_user(stamp, username, bank, userid, given, os_userid=host_uid),
        reason,
        actor,
    )
