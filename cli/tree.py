"""`view-bank -t`: flux-accounting's hierarchy printout, byte for byte (its print_hierarchy
expected files are our golden tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cli.output import SHARES_COLUMN, is_parent_shares
from ledger.bounds import printable
from ledger.slurm_parent import PARENT_TEXT

HEADER = ("Bank", "Username", "Active", "RawShares", "RawUsage", "Fairshare")


def _active(value: Any) -> str:
    return "true" if value else "false"


def render_tree(
    top: str,
    banks: Sequence[dict[str, Any]],
    users: Sequence[dict[str, Any]],
    parsable: bool = False,
    parent_shares: bool = False,
) -> str:
    """`banks`: bank_table rows; `users`: the association_table rows to show (the caller
    applies -c/-A to them; every bank is shown, as flux-accounting does). Children in name
    order; the top bank's usage rounded to 2 places, as flux-accounting prints the root.
    Shares are printed as numbers, as flux-accounting does, except Slurm's Fairshare=parent
    on a site where it means that (`parent_shares`): `parent`, as sshare prints it."""

    def shares(row: dict[str, Any]) -> str:
        if is_parent_shares(SHARES_COLUMN, row["shares"], parent_shares):
            return PARENT_TEXT
        return str(row["shares"])

    by_parent: dict[str, list[dict[str, Any]]] = {}
    for bank in banks:
        by_parent.setdefault(bank["parent_bank"], []).append(bank)
    users_in: dict[str, list[dict[str, Any]]] = {}
    for user in users:
        users_in.setdefault(user["bank"], []).append(user)
    by_name = {b["bank"]: b for b in banks}

    lines = [
        "|".join(HEADER)
        if parsable
        else HEADER[0].ljust(20) + "".join(h.rjust(20) for h in HEADER[1:])
    ]

    def bank_line(bank: dict[str, Any], depth: int, usage: Any) -> str:
        name = " " * depth + bank["bank"]
        values = [_active(bank["active"]), shares(bank), str(usage)]
        if parsable:
            return "|".join([name, "", *values])
        return name.ljust(20) + "".rjust(20) + "".join(v.rjust(20) for v in values)

    def user_line(user: dict[str, Any], depth: int) -> str:
        name = " " * depth + user["bank"]
        values = [
            user["username"],
            _active(user["active"]),
            shares(user),
            str(user["job_usage"]),
            str(user["fairshare"]),
        ]
        if parsable:
            return "|".join([name, *values])
        return name.ljust(20) + "".join(v.rjust(20) for v in values)

    def visit(bank: dict[str, Any], depth: int) -> None:
        # A Fair Tree or classic site's bank may hold users beside sub-banks: its users come
        # first, as in Slurm's tree order (a flux-accounting bank holds one kind or the other).
        for user in sorted(users_in.get(bank["bank"], []), key=lambda u: u["username"]):
            lines.append(user_line(user, depth + 1))
        for child in sorted(by_parent.get(bank["bank"], []), key=lambda b: b["bank"]):
            lines.append(bank_line(child, depth + 1, child["job_usage"]))
            visit(child, depth + 1)

    root = by_name[top]
    lines.append(bank_line(root, 0, round(root["job_usage"], 2)))
    visit(root, 0)
    # Names written before ledger.bounds refused control characters are shown escaped.
    return "\n".join(printable(line) for line in lines) + "\n"
