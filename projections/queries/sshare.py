"""sshare's rows: Fair Tree or classic over the site's tree with the usage at one moment.

Like Slurm's sshare, which asks the controller for the values of its last calculation, the
answer is computed at the moment asked about (the ledger's now, or --as-of T) from the site
state and the jobs recorded up to that moment, under the site's usage model; the algorithm is
the one in force then, or the one asked for (a preview: nothing is recorded). The rules are the
domain's (ledger.site_usage.slurm_result), the same the projector's update-fshare runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.errors import InvalidValue
from ledger.site_config import ALGORITHMS, WEIGHTED_WALK
from ledger.site_usage import slurm_result
from ledger.state import SiteState
from ledger.store.application import Ledger
from ledger.store.connections import Connection
from projections.queries.as_of import Moment, site_state_at, usage_then


@dataclass(frozen=True)
class SshareLine:
    """One association as sshare prints it. `depth`: root 0, an account its number of
    ancestors, a user row its account's depth + 1 (sshare indents the Account column by it).
    None stands for a blank (root's RawShares and NormUsage, an account's FairShare, LevelFS of
    root and of `parent` rows)."""

    account: str
    user: str | None
    depth: int
    raw_shares: int | None
    uses_parent: bool
    norm_shares: float
    raw_usage: float
    norm_usage: float | None
    effective_usage: float
    fair_share: float | None
    level_fs: float | None


@dataclass(frozen=True)
class SshareAnswer:
    algorithm: str  # fair-tree or classic
    previewed: bool  # --algorithm other than the one in force
    lines: list[SshareLine]


def sshare_lines(
    ledger: Ledger, conn: Connection, moment: Moment, at: float, algorithm: str | None
) -> SshareAnswer:
    """Every association's row at `at` (the log as it stood at `moment`), in sshare's order
    (lineage: root first, an account before what it holds)."""
    from ledger.slurm_shares import PARENT, ROOT

    state = site_state_at(ledger, moment.site_version)
    in_force = state.fairshare_algorithm
    chosen = algorithm or in_force
    if chosen not in ALGORITHMS:
        raise InvalidValue(f"unknown algorithm {chosen}: choose one of {', '.join(ALGORITHMS)}")
    if chosen == WEIGHTED_WALK:
        raise InvalidValue(
            f"sshare shows Slurm's algorithms and this site runs {WEIGHTED_WALK}: preview one "
            "with --algorithm fair-tree or --algorithm classic (bank-info shows the walk's tree)"
        )
    usage = usage_then(conn, state, at, moment.position)
    result, _keys = slurm_result(state, usage, chosen)
    lines = []
    for row in result.rows:
        level_fs = getattr(row, "level_fs", None)
        depth = 0 if row.account == ROOT else _depth(state, row.account)
        lines.append(
            SshareLine(
                account=row.account,
                user=row.user,
                depth=depth + 1 if row.user is not None else depth,
                raw_shares=row.raw_shares,
                uses_parent=row.raw_shares == PARENT,
                norm_shares=row.norm_shares,
                raw_usage=row.raw_usage,
                norm_usage=row.norm_usage,
                effective_usage=row.effective_usage,
                fair_share=row.fair_share,
                level_fs=None if level_fs is None else float(level_fs),
            )
        )
    return SshareAnswer(chosen, chosen != in_force, lines)


def _depth(state: SiteState, account: str) -> int:
    return len(state.ancestors(account))
