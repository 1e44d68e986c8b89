"""sshare: Slurm's fair-share rows of the site's tree, as Slurm's sshare selects them."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.clock import AsOf
from ledger.usecases.bank_info import caller_username
from ledger.usecases.session import Session
from projections.queries import as_of as as_of_view
from projections.queries.sshare import SshareAnswer, SshareLine, sshare_lines


@dataclass(frozen=True)
class SshareRequest:
    """sshare's selection: `all_users` (-a), `accounts` (-A), `users` (-u), `users_only` (-U),
    and `algorithm` (--algorithm: a preview under another algorithm)."""

    all_users: bool = False
    accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    users_only: bool = False
    algorithm: str | None = None


def sshare(s: Session, asked: SshareRequest, as_of: AsOf | None = None) -> SshareAnswer:
    """The rows sshare prints, at the ledger's now or as of a past moment. As in Slurm, every
    account row is shown, and the user rows of -u's users, of everybody with -a, else of the
    user running the command; -A keeps the rows of the accounts named (a user row belongs to
    its account); -U drops the account rows."""
    if as_of is not None:
        moment = s.moment(as_of)
        s.warn(moment.describe())
        at = moment.asked
    else:
        s.read()
        at = s.ledger.now().timestamp()
        moment = as_of_view.moment_at(s.conn, at)
    answer = sshare_lines(s.ledger, s.conn, moment, at, asked.algorithm)
    users = None if asked.all_users and not asked.users else set(asked.users or [caller_username()])

    def shown(line: SshareLine) -> bool:
        if asked.accounts and line.account not in asked.accounts:
            return False
        if line.user is None:
            return not asked.users_only
        return users is None or line.user in users

    return SshareAnswer(answer.algorithm, answer.previewed, [x for x in answer.lines if shown(x)])
