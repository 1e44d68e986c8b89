"""The bank tree in the JSON layout flux-accounting's `export-db -F` writes for its
`fairshare-emulate`: {"root": {bank, shares, usage, children: [sub-banks | associations]}}."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.errors import NotFound

Node = dict[str, Any]


def emulator_tree(banks: Sequence[Node], associations: Sequence[Node]) -> dict[str, Node]:
    """`banks`: bank_table rows (bank, parent_bank, shares, job_usage), parents before their
    children or not; `associations`: association_table rows (username, bank, shares,
    job_usage). Inactive rows are kept, as flux-accounting keeps them: the emulator is asked
    what-if questions about the whole tree. A bank's children: its associations in the order
    given, then its sub-banks in the order given (a bank holds one kind only)."""
    nodes: dict[str, Node] = {
        b["bank"]: {
            "bank": b["bank"],
            "shares": int(b["shares"]),
            "usage": float(b["job_usage"]),
            "children": [],
        }
        for b in banks
    }
    for a in associations:
        if a["bank"] in nodes:
            nodes[a["bank"]]["children"].append(
                {
                    "username": a["username"],
                    "shares": int(a["shares"]),
                    "usage": float(a["job_usage"]),
                }
            )
    root: Node | None = None
    for b in banks:
        if not b["parent_bank"]:
            root = nodes[b["bank"]]
        elif b["parent_bank"] in nodes:
            nodes[b["parent_bank"]]["children"].append(nodes[b["bank"]])
    if root is None:
        raise NotFound("No root bank found in database")
    return {"root": root}
