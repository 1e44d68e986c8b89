"""show-usage: the associations or banks that used the most, for a bar chart."""

from __future__ import annotations

from ledger.clock import AsOf
from ledger.errors import InvalidValue
from ledger.usecases.session import Session
from projections.queries import top_usage

KINDS = ("associations", "banks")


def top_usage_of(
    s: Session, kind: str, limit: int, as_of: AsOf | None = None
) -> list[tuple[str, float]]:
    """The `limit` largest decayed usages of `kind` (banks leave the root out), largest first,
    each with its label: "user / bank" or the bank's name."""
    if kind not in KINDS:
        raise InvalidValue(f"invalid choice: {kind!r} (choose from {', '.join(KINDS)})")
    if limit < 0:
        raise InvalidValue(f"--limit must be 0 or more, got {limit}")
    conn = s.read(as_of)
    if kind == "associations":
        return top_usage.top_associations(conn, limit)
    return top_usage.top_banks(conn, limit)
