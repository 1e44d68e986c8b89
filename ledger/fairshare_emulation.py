"""fairshare-emulate: fair-share of a bank tree with usage changed by hand, computed and recorded
nowhere. The walk is update-fshare's (ledger.fairshare), not flux-accounting's Python emulator,
which differs from its own C++ walk (see docs/semantics.md): an emulation here predicts what
update-fshare would give.

A tree comes from the ledger or from flux-accounting's `export-db -F` JSON:
`{"root": {"bank", "shares", "usage", "children": [banks..., {"username", "shares",
"usage"}]}}`, a missing `shares` being 1 and a missing `usage` 0, as its emulator reads it. A
bank's `usage` in that file is not used: a bank's usage is the sum of its users', as the walk
computes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ledger.errors import InvalidValue
from ledger.fairshare import BankNode, UserLeaf, iter_users, rank_associations

AssocKey = tuple[str, str]
Number = int | float


@dataclass(frozen=True)
class UsageChange:
    """Set (or, with `add`, add to) the usage of the association (username, bank)."""

    username: str
    bank: str
    usage: Number
    add: bool = False


@dataclass(frozen=True)
class EmulatedShare:
    username: str
    bank: str
    shares: int
    usage: Number  # as given (an integer in the file stays one)
    fairshare: float


@dataclass(frozen=True)
class EmulatedTree:
    root: BankNode
    shown_usage: dict[AssocKey, Number]


def tree_from_export(data: Any) -> EmulatedTree:
    """A tree in flux-accounting's `export-db -F` layout; InvalidValue names what is wrong."""
    if not isinstance(data, Mapping) or "root" not in data:
        raise InvalidValue("JSON must contain 'root' key")
    shown: dict[AssocKey, Number] = {}
    root = _bank_from(data["root"], shown)
    return EmulatedTree(root, shown)


def _bank_from(node: Any, shown: dict[AssocKey, Number]) -> BankNode:
    if not isinstance(node, Mapping) or not isinstance(node.get("bank"), str) or not node["bank"]:
        raise InvalidValue(f"Node must have 'username' or 'bank' key: {_short(node)}")
    name = node["bank"]
    children = node.get("children", [])
    if not isinstance(children, list):
        raise InvalidValue(f"children of bank {name} must be a list")
    banks: list[BankNode] = []
    users: list[UserLeaf] = []
    for child in children:
        if isinstance(child, Mapping) and "username" in child:
            username = child["username"]
            if not isinstance(username, str) or not username:
                raise InvalidValue(f"Node must have 'username' or 'bank' key: {_short(child)}")
            usage = _usage(child, f"association ({username}, {name})")
            shown[(username, name)] = usage
            users.append(UserLeaf(username, name, _shares(child), float(usage)))
        else:
            banks.append(_bank_from(child, shown))
    return BankNode(name, _shares(node), tuple(banks), tuple(users))


def _shares(node: Mapping[str, Any]) -> Any:
    return node.get("shares", 1)  # UserLeaf and BankNode refuse what is not an integer >= 0


def _usage(node: Mapping[str, Any], what: str) -> Number:
    usage = node.get("usage", 0)
    if isinstance(usage, bool) or not isinstance(usage, int | float) or not math.isfinite(usage):
        raise InvalidValue(f"usage of {what} must be a finite number, got {usage!r}")
    if usage < 0:
        raise InvalidValue(f"usage of {what} must be >= 0, got {usage!r}")
    return usage


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def with_changes(tree: EmulatedTree, changes: Sequence[UsageChange]) -> EmulatedTree:
    """The tree with each change applied in order. A change must name an association of the
    tree, and leave its usage finite and not negative."""
    shown = dict(tree.shown_usage)
    for change in changes:
        key = (change.username, change.bank)
        if key not in shown:
            raise InvalidValue(f"no association ({change.username}, {change.bank}) in the tree")
        usage = shown[key] + change.usage if change.add else change.usage
        if not math.isfinite(usage) or usage < 0:
            raise InvalidValue(
                f"usage of association ({change.username}, {change.bank}) would be {usage!r}:"
                " it must be a finite number >= 0"
            )
        shown[key] = usage
    return EmulatedTree(_with_usage(tree.root, shown), shown)


def _with_usage(bank: BankNode, shown: Mapping[AssocKey, Number]) -> BankNode:
    users = tuple(replace(u, usage=float(shown[(u.username, u.bank)])) for u in bank.users)
    children = tuple(_with_usage(child, shown) for child in bank.children)
    return replace(bank, users=users, children=children)


def emulate(tree: EmulatedTree) -> list[EmulatedShare]:
    """Every association's fair-share, in the walk's order (best first)."""
    users = {(u.username, u.bank): u for u in iter_users(tree.root)}
    ranking = rank_associations(tree.root)
    return [
        EmulatedShare(key[0], key[1], users[key].shares, tree.shown_usage[key], value)
        for key, value in ranking.fairshare().items()
    ]


def tree_from_walk_input(root: BankNode | None) -> EmulatedTree:
    """The tree update-fshare would walk (None: a ledger without an active root)."""
    if root is None:
        raise InvalidValue("no users found in input")
    return EmulatedTree(root, {(u.username, u.bank): u.usage for u in iter_users(root)})
