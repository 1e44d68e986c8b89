"""Adding and editing associations: add-user with the numeric user id the host knows for its
user when none is given (flux-accounting's add-user looks it up the same way), edit-user and
edit-all-users, each with --fairshare (a value set by hand, in force until a walk ranks the
association)."""

from __future__ import annotations

import pwd
from typing import TYPE_CHECKING, Any

from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.usecases.session import Session
from projections.queries import fairshare_shown

if TYPE_CHECKING:  # the Site is loaded (and imported) by a change: list-users needs none
    from ledger.site import Site, Stamp


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
    fairshare: float | str | None = None,
) -> None:
    """USERNAME in BANK, added (or reactivated with the values `given`). Its uid: `userid`,
    else the one the user already has in the ledger, else the host's, else 65534. With
    `fairshare`, the association starts with that fair-share instead of 0.5."""
    host_uid = host_userid(username) if userid is None else None

    def command(site: Site, stamp: Stamp) -> None:
        site.add_user(stamp, username, bank, userid, given, os_userid=host_uid)
        if fairshare is not None:
            set_fairshare(session, site, stamp, [(username, bank)], fairshare)

    session.change(command, reason, actor)


def set_fairshare(
    session: Session, site: Site, stamp: Stamp, keys: list[tuple[str, str]], value: float | str
) -> int:
    """--fairshare for the associations `keys`, inside a command already running: each event
    carries the value the association's row shows (a new one's: 0.5) as its old value."""
    shown = fairshare_shown.shown_fairshare(session.conn)
    return sum(
        site.set_fairshare(
            stamp, username, bank, value, shown.get((username, bank), NEW_ASSOCIATION_FAIRSHARE)
        )
        for username, bank in keys
    )


def edit_user(
    session: Session,
    username: str,
    bank: str | None,
    given: dict[str, Any],
    add_queues: list[str],
    delete_queues: list[str],
    default_bank: str | None,
    fairshare: float | str | None,
    actor: str | None = None,
    reason: str | None = None,
) -> int:
    """edit-user: USERNAME's associations (or the one in BANK) edited in one transaction.
    Returns the number of events recorded (0: nothing to change)."""

    def command(site: Site, stamp: Stamp) -> int:
        recorded = site.edit_user(
            stamp, username, bank, given, add_queues, delete_queues, default_bank
        )
        if fairshare is not None:
            banks = [bank] if bank is not None else sorted(site.state.associations[username])
            recorded += set_fairshare(
                session, site, stamp, [(username, b) for b in banks], fairshare
            )
        return recorded

    return session.change(command, reason, actor)


def edit_all_users(
    session: Session,
    given: dict[str, Any],
    default_bank: str | None,
    fairshare: float | str | None,
    actor: str | None = None,
    reason: str | None = None,
) -> int:
    """edit-all-users: every association edited in one transaction (events recorded)."""

    def command(site: Site, stamp: Stamp) -> int:
        recorded = site.edit_all_users(stamp, given, default_bank)
        if fairshare is not None:
            keys = [(a.username, a.bank) for a in site.state.all_associations()]
            recorded += set_fairshare(session, site, stamp, sorted(keys), fairshare)
        return recorded

    return session.change(command, reason, actor)
