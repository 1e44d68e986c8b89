"""bank-info: flux-accounting's sshare-like view of the bank tree, as a pure calculation.

Each node's normalised shares are its share of its parent's: `shares / Σ shares of the siblings
of its own kind (users, or sub-banks) × parent's normalised shares`, the root being 1.0 (a node
whose siblings hold no shares gets 0.0). Normalised usage is `usage / root usage` (every node
0.0 when the root has used nothing; the root stays 1.0). Every bank and association is in the
tree, inactive ones too, as flux-accounting builds it. "Level FS" is the association's stored
fair-share; a bank has none (NaN, shown "--") and the root is infinite.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ledger.errors import InvalidValue, NotFound


@dataclass
class ShareNode:
    name: str
    is_user: bool
    depth: int  # the root 0; a bank's children (sub-banks and users alike) its depth + 1
    shares: int
    usage: float
    fairshare: float  # NaN for a bank, infinity for the root
    parent: ShareNode | None = None
    children: list[ShareNode] = field(default_factory=list)
    norm_shares: float = 0.0
    norm_usage: float = 0.0

    def path_to_root(self) -> list[ShareNode]:
        """This node and its ancestors, the root last."""
        path: list[ShareNode] = []
        node: ShareNode | None = self
        while node is not None:
            path.append(node)
            node = node.parent
        return path


@dataclass(frozen=True)
class BankRow:
    name: str
    parent: str  # "" for the root
    shares: int
    usage: float


@dataclass(frozen=True)
class UserRow:
    username: str
    bank: str
    shares: int
    usage: float
    fairshare: float


def share_tree(banks: Sequence[BankRow], users: Sequence[UserRow]) -> ShareNode:
    """The whole tree, children in name order (sub-banks first, then users, as flux-accounting
    reads them), with normalised shares and usage. Raises NotFound without a root bank."""
    roots = [b for b in banks if b.parent == ""]
    if not roots:
        raise NotFound("No root bank found in bank_table")
    sub_banks: dict[str, list[BankRow]] = {}
    for bank in banks:
        sub_banks.setdefault(bank.parent, []).append(bank)
    members: dict[str, list[UserRow]] = {}
    for user in users:
        members.setdefault(user.bank, []).append(user)
    root_row = min(roots, key=lambda b: b.name)
    root = ShareNode(root_row.name, False, 0, root_row.shares, root_row.usage, math.inf)
    root.norm_shares = 1.0

    def grow(node: ShareNode, seen: set[str]) -> None:
        if node.name in seen:  # a cycle cannot be stored, but a tree must never loop
            raise InvalidValue(f"bank {node.name} is its own ancestor")
        seen = seen | {node.name}
        for bank in sorted(sub_banks.get(node.name, []), key=lambda b: b.name):
            child = ShareNode(bank.name, False, node.depth + 1, bank.shares, bank.usage, math.nan)
            child.parent = node
            node.children.append(child)
            grow(child, seen)
        for user in sorted(members.get(node.name, []), key=lambda u: u.username):
            leaf = ShareNode(
                user.username, True, node.depth + 1, user.shares, user.usage, user.fairshare
            )
            leaf.parent = node
            node.children.append(leaf)

    grow(root, set())
    _normalise(root)
    return root


def _normalise(root: ShareNode) -> None:
    for node in walk(root):
        for kind in (True, False):
            siblings = [c for c in node.children if c.is_user == kind]
            total = sum(c.shares for c in siblings)
            for child in siblings:
                child.norm_shares = child.shares / total * node.norm_shares if total > 0 else 0.0
    if root.usage > 0:
        for node in walk(root):
            node.norm_usage = node.usage / root.usage
    else:
        root.norm_usage = 1.0


def walk(node: ShareNode) -> Iterator[ShareNode]:
    """The subtree in depth-first order, a bank before its children."""
    yield node
    for child in node.children:
        yield from walk(child)


def find(root: ShareNode, name: str, is_user: bool) -> list[ShareNode]:
    """Every node named `name` of that kind (a user has one per bank), in tree order."""
    found = [n for n in walk(root) if n.name == name and n.is_user == is_user]
    if not found:
        raise NotFound(f'Could not find "{name}"')
    return found


def down_from(top: ShareNode, with_users: bool, exclude: str | None) -> list[ShareNode]:
    """`top` and its subtree (its users too if `with_users`), without the bank `exclude` and
    everything under it."""
    out = [top]
    for child in sorted(top.children, key=lambda c: c.name):
        if exclude is not None and child.name == exclude:
            continue
        if child.is_user:
            if with_users:
                out.append(child)
        else:
            out += down_from(child, with_users, exclude)
    return out


def up_to_root(targets: Sequence[ShareNode], exclude: str | None) -> list[ShareNode]:
    """For each target, the root down to it; a path through the bank `exclude` is left out."""
    out: list[ShareNode] = []
    for target in targets:
        path = target.path_to_root()
        if exclude is not None and any(n.name == exclude for n in path[:-1]):
            continue
        out += reversed(path)
    return out
