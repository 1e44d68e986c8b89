"""A test oracle for `ledger.fair_tree`: Fair Tree as it was first written, one object per
association and one recursive call per account, kept here (and only here) to check the
vectorised implementation against, row for row and bit for bit.

It is the code of `ledger.slurm_shares.build_tree` and `ledger.fair_tree.compute_fair_tree` as of
commit fd71385, made self-contained (its own tree node) so that a change to the production tree
cannot change the oracle with it. The Slurm semantics are explained in those modules' docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ledger.errors import InvalidValue
from ledger.fair_tree import FairTreeRow
from ledger.slurm_shares import NO_VAL, PARENT, ROOT, SlurmAccount, SlurmUser

_LD = np.longdouble
_NO_VAL_LD = _LD(NO_VAL)
_INF_LD = _LD(np.inf)
_ZERO_LD = _LD(0)


@dataclass(eq=False)
class OracleNode:
    """The oracle's `ledger.slurm_shares.Association`."""

    account: str
    user: str | None
    shares: int | None
    lineage: bytes
    parent: OracleNode | None = None
    fs_parent: OracleNode | None = None
    fs_children: list[OracleNode] = field(default_factory=list)
    children: list[OracleNode] = field(default_factory=list)
    level_shares: int = 0
    usage_raw: np.longdouble = field(default_factory=lambda: _LD(0))

    @property
    def is_user(self) -> bool:
        return self.user is not None

    @property
    def uses_parent(self) -> bool:
        return self.shares == PARENT


def oracle_rows(accounts: list[SlurmAccount], users: list[SlurmUser]) -> list[FairTreeRow]:
    """Every association's Fair Tree row in lineage order, root first, the slow way."""
    root, ordered = _build(accounts, users)
    user_count = sum(1 for node in ordered if node.is_user)
    values: dict[int, tuple[float, np.longdouble | None, np.longdouble, np.longdouble | None]] = {
        id(root): (0.0, None, _LD(1), None)
    }
    ranks: dict[int, int] = {}
    state = {"rank": user_count, "rnt": user_count}

    def calc(node: OracleNode) -> np.longdouble:
        parent = node.fs_parent
        assert parent is not None
        effective = _ZERO_LD if parent.usage_raw == _ZERO_LD else node.usage_raw / parent.usage_raw
        if root.usage_raw == _ZERO_LD:
            usage_norm = _ZERO_LD
        else:
            usage_norm = min(node.usage_raw / root.usage_raw, _LD(1))
        fa = node.fs_parent if node.uses_parent and node.fs_parent is not None else node
        shares = 0.0 if not fa.level_shares or fa.shares is None else fa.shares / fa.level_shares
        if node.uses_parent:
            lf = _INF_LD if node.is_user else _NO_VAL_LD
        elif _LD(shares) == _ZERO_LD:
            lf = _ZERO_LD
        else:
            with np.errstate(divide="ignore"):
                lf = _LD(shares) / effective
        shown = None if (node.uses_parent and not node.is_user) else lf
        values[id(node)] = (shares, usage_norm, effective, shown)
        return lf

    def visit(siblings: list[OracleNode], account_tied: bool) -> None:
        keyed = [(calc(node), node.is_user, node) for node in siblings]
        keyed.sort(key=lambda k: (-k[0], not k[1]))
        prev = _NO_VAL_LD
        for index, (lf, is_user, node) in enumerate(keyed):
            tied = True if index == 0 and account_tied else bool(prev == lf)
            if is_user:
                if not tied:
                    state["rank"] = state["rnt"]
                ranks[id(node)] = state["rank"]
                state["rnt"] -= 1
            else:
                visit(node.fs_children, account_tied=tied)
            prev = lf

    visit(root.fs_children, account_tied=False)
    rows = []
    for node in ordered:
        shares, usage_norm, effective, shown = values[id(node)]
        rank = ranks.get(id(node))
        rows.append(
            FairTreeRow(
                account=node.account,
                user=node.user,
                raw_shares=node.shares,
                norm_shares=shares,
                raw_usage=float(node.usage_raw),
                norm_usage=None if usage_norm is None else float(usage_norm),
                effective_usage=float(effective),
                level_fs=shown,
                rank=rank,
                fair_share=None if rank is None else rank / user_count,
            )
        )
    return rows


def oracle_tree(accounts: list[SlurmAccount], users: list[SlurmUser]) -> list[OracleNode]:
    """Every association linked as `ledger.slurm_shares.build_tree` links it, lineage order."""
    return _build(accounts, users)[1]


def _build(
    accounts: list[SlurmAccount], users: list[SlurmUser]
) -> tuple[OracleNode, list[OracleNode]]:
    root = OracleNode(account=ROOT, user=None, shares=None, lineage=b"/")
    by_name: dict[str, SlurmAccount] = {}
    for account in accounts:
        if account.name in by_name:
            raise InvalidValue(f"account {account.name!r} appears twice")
        by_name[account.name] = account
    nodes: dict[str, OracleNode] = {ROOT: root}

    def account_node(name: str, path: tuple[str, ...] = ()) -> OracleNode:
        if name in nodes:
            return nodes[name]
        if name in path:
            raise InvalidValue(f"accounts form a cycle: {' -> '.join((*path, name))}")
        spec = by_name.get(name)
        if spec is None:
            raise InvalidValue(f"unknown account {name!r} (parent of {path[-1]!r})")
        parent = account_node(spec.parent, (*path, name))
        node = OracleNode(name, None, spec.shares, parent.lineage + name.encode() + b"/", parent)
        nodes[name] = node
        return node

    for account in accounts:
        account_node(account.name)
    seen: set[tuple[str, str]] = set()
    leaves: list[tuple[OracleNode, float]] = []
    for user in users:
        if (user.name, user.account) in seen:
            raise InvalidValue(f"user ({user.name}, {user.account}) appears twice")
        seen.add((user.name, user.account))
        holder = nodes.get(user.account)
        if holder is None:
            raise InvalidValue(f"unknown account {user.account!r} of user {user.name!r}")
        lineage = holder.lineage + b"0-" + user.name.encode() + b"/"
        leaves.append(
            (OracleNode(user.account, user.name, user.shares, lineage, holder), user.usage)
        )

    ordered = sorted([*nodes.values(), *(leaf for leaf, _ in leaves)], key=lambda n: n.lineage)
    for node in ordered:
        if node.parent is not None:
            node.parent.children.append(node)
            node.fs_parent = _fs_parent(node)
            node.fs_parent.fs_children.append(node)
    for node in ordered:
        level = _children_level_shares(node)
        for child in node.fs_children:
            child.level_shares = level
    usage = {id(leaf): value for leaf, value in leaves}
    for node in ordered:
        if node.is_user:
            amount = _LD(usage[id(node)])
            up: OracleNode | None = node
            while up is not None:
                up.usage_raw = up.usage_raw + amount
                up = up.parent
    return root, ordered


def _children_level_shares(node: OracleNode) -> int:
    total = sum(
        _children_level_shares(child) if child.uses_parent else (child.shares or 0)
        for child in node.fs_children
    )
    return total % 2**32


def _fs_parent(node: OracleNode) -> OracleNode:
    parent = node.parent
    assert parent is not None
    if node.uses_parent:
        return _first_non_parent_above(node)
    if parent.uses_parent:
        return _first_non_parent_above(parent)
    return parent


def _first_non_parent_above(node: OracleNode) -> OracleNode:
    up = node.parent
    assert up is not None
    while up.uses_parent and up.parent is not None:
        up = up.parent
    return up
