"""bank-info: flux-accounting's sshare-like view of banks and users, in its exact columns."""

from __future__ import annotations

import math

import click

from cli.params import AsOf, as_of_option
from cli.session import session
from ledger.bank_info import ShareNode
from ledger.bounds import printable
from ledger.usecases.bank_info import BankInfoRequest, bank_info

# The four views, as flux-accounting's mutually exclusive group names them.
_VIEWS = [
    ("tree", "-t/--tree"),
    ("tree_no_users", "-T/--tree-no-users"),
    ("to_root", "-r/--to-root"),
    ("user", "-u/--user"),
]


def header(verbose: bool, parsable: bool) -> str:
    if parsable:
        return (
            "Name|Shares|Norm_Shares|Usage|Norm_Usage|Norm_FS|Type"
            if verbose
            else "Name|Shares|Norm_Shares|Norm_Usage|Norm_FS"
        )
    head = f"{'Name':20s} {'Shares':>10s} {'Norm Shares':>12s} "
    if verbose:
        return head + f"{'Usage':>13s} {'Norm Usage':>12s} {'Level FS':>10s} {'Type':>5s}"
    return head + f"{'Norm Usage':>12s} {'Level FS':>10s}"


def node_line(node: ShareNode, default_bank: str | None, verbose: bool, parsable: bool) -> str:
    """One node as flux-accounting prints it: indented one space per level (users one more),
    a `*` after the asked user's default bank, Level FS `--` for a bank."""
    name = " " * node.depth + printable(node.name)
    if node.is_user:
        name = " " + name
    elif default_bank is not None and node.name == default_bank:
        name += "*"
    kind = "User" if node.is_user else "Bank"
    fs = "--" if math.isnan(node.fairshare) else f"{node.fairshare:.3f}"
    if parsable:
        if verbose:  # flux-accounting prints the raw value here: "nan" for a bank
            return (
                f"{name}|{node.shares}|{node.norm_shares:.6f}|{node.usage:.1f}|"
                f"{node.norm_usage:.6f}|{node.fairshare:.6f}|{kind}"
            )
        return f"{name}|{node.shares}|{node.norm_shares:.6f}|{node.norm_usage:.6f}|{fs}"
    line = f"{name:20s} {node.shares:10d} {node.norm_shares:12.6f} "
    if verbose:
        return line + f"{node.usage:13.1f} {node.norm_usage:12.6f} {fs:>10s} {kind:>5s}"
    return line + f"{node.norm_usage:12.6f} {fs:>10s}"


@click.command("bank-info")
@click.option("-v", "--verbose", is_flag=True, help="Also show raw usage and the node type.")
@click.option("-P", "--parsable", is_flag=True, help="'|'-delimited columns.")
@click.option("-n", "--noheader", is_flag=True, help="Leave out the header line.")
@click.option("-x", "--exclude", metavar="BANK", default=None, help="Do not show BANK.")
@click.option("-t", "--tree", metavar="BANK", default=None, help="BANK and all below it.")
@click.option("-T", "--tree-no-users", metavar="BANK", default=None, help="BANK and its sub-banks.")
@click.option("-r", "--to-root", metavar="BANK", default=None, help="BANK and its parents.")
@click.option(
    "-u", "--user", metavar="USER", default=None, help="Every bank of USER, up to the root."
)
@as_of_option
@click.pass_context
def bank_info_command(
    ctx: click.Context,
    as_of: AsOf | None,
    verbose: bool,
    parsable: bool,
    noheader: bool,
    exclude: str | None,
    tree: str | None,
    tree_no_users: str | None,
    to_root: str | None,
    user: str | None,
) -> None:
    """Normalised shares, usage and fair-share of banks and users (default: your own
    associations, up to the root). Inactive banks and users are shown too."""
    given = {"tree": tree, "tree_no_users": tree_no_users, "to_root": to_root, "user": user}
    chosen = [flag for key, flag in _VIEWS if given[key] is not None]
    if len(chosen) > 1:
        # argparse's words for its mutually exclusive group.
        raise click.UsageError(f"argument {chosen[1]}: not allowed with argument {chosen[0]}")
    asked = BankInfoRequest(tree, tree_no_users, to_root, user, exclude)
    shown = bank_info(session(ctx), asked, as_of)
    lines = [] if noheader else [header(verbose, parsable)]
    lines += [node_line(n, shown.default_bank, verbose, parsable) for n in shown.nodes]
    click.echo("\n".join(lines))


COMMANDS = [bank_info_command]
