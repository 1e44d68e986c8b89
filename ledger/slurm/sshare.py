"""`sshare` parsable output: RawUsage per association, e.g. as an opening balance.

Read: `sshare -a -l -P` (or `-p`, whose lines end with a `|`, or `-o` with at least Account,
User and RawUsage; `-m` adds Partition, `-M` a `CLUSTER: <name>` line before the header, which
is read too). The header names the columns (any order, any case); without a header (`-n`) pass
`columns`. Read columns: Account, User, RawUsage, and Partition, RawShares, Cluster when present;
the others (NormShares, NormUsage, EffectvUsage, FairShare, LevelFS, GrpTRESMins, GrpTRESRaw,
TRESRunMins, ID) are computed values or limits and are ignored.

* Account is stripped of the depth indentation sshare adds (also in parsable mode).
* A row with a blank User is an account row (root included): its user is None.
* RawUsage is sshare's `uint64(usage_raw)`; a fraction (`1234.5`) is allowed here, as other
  tools may print one. RawShares is an int, `parent` (`PARENT`), or blank (root).

Errors: InvalidValue with one line per offending line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ledger.errors import InvalidValue
from ledger.slurm._lines import LineError, LineErrors, split_parsable
from ledger.slurm_shares import PARENT

_KNOWN = (
    "Account",
    "User",
    "RawUsage",
    "Partition",
    "RawShares",
    "Cluster",
    "NormShares",
    "NormUsage",
    "EffectvUsage",
    "FairShare",
    "LevelFS",
    "GrpTRESMins",
    "GrpTRESRaw",
    "TRESRunMins",
    "ID",
)
_REQUIRED = ("Account", "User", "RawUsage")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_CLUSTER_LINE = re.compile(r"CLUSTER:\s*(\S+)\s*")


@dataclass(frozen=True)
class SshareRow:
    """One sshare row: an account row (`user` None) or a user association."""

    account: str
    user: str | None
    raw_usage: float
    partition: str | None = None
    raw_shares: int | None = None
    cluster: str | None = None
    line: int = 0


@dataclass(frozen=True)
class SshareUsage:
    """The rows in sshare's order."""

    rows: tuple[SshareRow, ...]

    def usage(self) -> dict[tuple[str, str | None], float]:
        """(account, user) -> RawUsage; user None for account rows (root is ('root', None)).
        InvalidValue if a key repeats (per-partition rows of one association: use `rows`)."""
        out: dict[tuple[str, str | None], float] = {}
        first: dict[tuple[str, str | None], int] = {}
        for row in self.rows:
            key = (row.account, row.user)
            if key in out:
                raise InvalidValue(
                    f"sshare line {row.line}: ({row.account}, {row.user or ''}) also on line"
                    f" {first[key]} (per-partition rows? read `rows` instead)"
                )
            out[key] = row.raw_usage
            first[key] = row.line
        return out

    def user_usage(self) -> dict[tuple[str, str], float]:
        """(account, user) -> RawUsage for user rows only (the input of `SlurmUser`)."""
        return {(a, u): v for (a, u), v in self.usage().items() if u is not None}


def parse_sshare(
    text: str, columns: Sequence[str] | None = None, delimiter: str = "|"
) -> SshareUsage:
    """Parse sshare's parsable output. `columns`: the column names when the output has no
    header line (`sshare -n`); the `-p` trailing delimiter is then detected from the rows."""
    errors = LineErrors("sshare")
    numbered = [(n, line.rstrip("\r\n")) for n, line in enumerate(text.splitlines(), start=1)]
    numbered = [(n, line) for n, line in numbered if line.strip()]
    cluster: str | None = None
    while numbered and _CLUSTER_LINE.fullmatch(numbered[0][1].strip()):
        match = _CLUSTER_LINE.fullmatch(numbered[0][1].strip())
        assert match is not None
        cluster = match.group(1)
        numbered = numbered[1:]
    if columns is None:
        if not numbered:
            raise InvalidValue("sshare: no header line (or pass the column names)")
        header_no, header_line = numbered[0]
        trailing = header_line.endswith(delimiter)
        header = [h.strip() for h in split_parsable(header_line, delimiter, trailing)]
        body = numbered[1:]
    else:
        header_no, header = 0, [c.strip() for c in columns]
        trailing = bool(numbered) and numbered[0][1].count(delimiter) == len(header)
        body = numbered
    index = _column_index(header, header_no)
    rows: list[SshareRow] = []
    for number, line in body:
        if _CLUSTER_LINE.fullmatch(line.strip()):
            match = _CLUSTER_LINE.fullmatch(line.strip())
            assert match is not None
            cluster = match.group(1)
            continue
        try:
            values = split_parsable(line, delimiter, trailing)
            if len(values) != len(header):
                raise LineError(f"{len(values)} fields for {len(header)} columns: {line!r}")
            rows.append(_row(values, index, number, cluster))
        except LineError as exc:
            errors.add(number, str(exc))
    errors.raise_if_any()
    return SshareUsage(tuple(rows))


def _column_index(header: list[str], number: int) -> dict[str, int]:
    known = {name.lower(): name for name in _KNOWN}
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        canonical = known.get(name.lower())
        if canonical is None:
            raise InvalidValue(
                f"sshare line {number}: {name!r} is not an sshare column ({', '.join(_KNOWN)})"
            )
        if canonical in index:
            raise InvalidValue(f"sshare line {number}: column {name!r} appears twice")
        index[canonical] = i
    missing = [c for c in _REQUIRED if c not in index]
    if missing:
        raise InvalidValue(
            f"sshare line {number}: the columns lack {', '.join(missing)}"
            f" (columns: {'|'.join(header)})"
        )
    return index


def _row(
    values: list[str], index: Mapping[str, int], number: int, cluster: str | None
) -> SshareRow:
    account = values[index["Account"]].strip()
    user = values[index["User"]].strip() or None
    if not account:
        raise LineError(f"blank Account (user {user!r})")
    raw = values[index["RawUsage"]].strip()
    if not _NUMBER.fullmatch(raw):
        raise LineError(f"RawUsage {raw!r} is not a number >= 0")
    raw_usage = float(raw)
    if not math.isfinite(raw_usage):
        raise LineError(f"RawUsage {raw!r} is too large")
    shares: int | None = None
    if "RawShares" in index:
        text = values[index["RawShares"]].strip()
        if text.lower() == "parent":
            shares = PARENT
        elif text:
            if not text.isdigit() or int(text) > PARENT:
                raise LineError(f"RawShares {text!r} is not a whole number, 'parent' or blank")
            shares = int(text)
    partition = values[index["Partition"]].strip() or None if "Partition" in index else None
    row_cluster = values[index["Cluster"]].strip() or cluster if "Cluster" in index else cluster
    return SshareRow(account, user, raw_usage, partition, shares, row_cluster, number)
