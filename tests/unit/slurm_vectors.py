"""Loads the Slurm testsuite vectors kept as data in tests/data/slurm/ (origins in each file)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ledger.slurm_shares import PARENT, SlurmAccount, SlurmUser

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"


@dataclass(frozen=True)
class Vector:
    accounts: tuple[SlurmAccount, ...]
    users: tuple[SlurmUser, ...]
    expected: tuple[str, ...]


def _shares(value: int | str) -> int:
    return PARENT if value == "parent" else int(value)


def load_vector(name: str) -> Vector:
    raw = json.loads((DATA / f"{name}.json").read_text())
    return Vector(
        accounts=tuple(SlurmAccount(n, p, _shares(s)) for n, p, s in raw["accounts"]),
        users=tuple(SlurmUser(n, a, _shares(s), float(u)) for n, a, s, u in raw["users"]),
        expected=tuple(raw["expected"]),
    )


def expected_fields(line: str, count: int) -> list[str]:
    """The first `count` `|`-terminated fields of an expected sshare line (fewer if it is a
    substring the test matched, like test24.1's `AccountG|User6|0|`)."""
    return line.split("|")[:-1][:count]
