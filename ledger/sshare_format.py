"""How `sshare -p` prints the numbers of a fair-share row (`src/common/print_fields.c`).

Shared by `ledger.fair_tree` and `ledger.classic_fairshare`. Pure string formatting, no I/O.

* A double is printed with `%f` (six decimals, correctly rounded, half to even on exact binary
  ties: 2^-7 prints `0.007812`), and `inf` for infinity. Python's `%f` gives the same digits as
  glibc's `printf`.
* `print_fields_double` prints a blank instead when the value equals NO_VAL, INFINITE, NO_VAL64
  or INFINITE64 converted to double: that is how unset values (root's NormUsage, a `parent`
  account's LevelFS, an account's FairShare) come out blank. None stands for those here.
* RawShares (`print_fields_uint32`, or the word `parent`) is blank for root (NO_VAL).
"""

from __future__ import annotations

from typing import Protocol

from ledger.slurm_shares import INFINITE, INFINITE64, NO_VAL, NO_VAL64, PARENT, PARENT_TEXT

_BLANK_DOUBLES = frozenset(float(v) for v in (NO_VAL, INFINITE, NO_VAL64, INFINITE64))


def format_double(value: float | None) -> str:
    """`print_fields_double`'s text for one value (without the `|` delimiter)."""
    if value is None:
        return ""
    value = float(value)
    if value in _BLANK_DOUBLES:
        return ""
    return f"{value:f}"


def format_raw_shares(shares: int | None) -> str:
    """The RawShares column: blank for root, `parent` for `Fairshare=parent`."""
    if shares is None:
        return ""
    if shares == PARENT:
        return PARENT_TEXT
    return str(shares)


class SshareColumns(Protocol):
    """What a row of either algorithm holds for the columns classic and Fair Tree print alike."""

    @property
    def account(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def raw_shares(self) -> int | None: ...
    @property
    def norm_shares(self) -> float: ...
    @property
    def printed_raw_usage(self) -> int: ...
    @property
    def norm_usage(self) -> float | None: ...
    @property
    def effective_usage(self) -> float: ...
    @property
    def fair_share(self) -> float | None: ...


def sshare_columns(row: SshareColumns) -> list[str]:
    """Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare as
    `sshare -a -l -p` prints them under either algorithm (Fair Tree adds LevelFS after)."""
    return [
        row.account,
        row.user or "",
        format_raw_shares(row.raw_shares),
        format_double(row.norm_shares),
        str(row.printed_raw_usage),
        format_double(row.norm_usage),
        format_double(row.effective_usage),
        format_double(row.fair_share),
    ]
