"""The doctor's text: one line per poisoned event (projections.doctor gives the findings)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the doctor is imported only by the command that runs it (start-up time)
    from projections.doctor import Finding


def finding_line(finding: Finding) -> str:
    """`position 7  2026-01-02T03:04:05Z  BankAdded A by ops: <problem>`."""
    when = datetime.fromtimestamp(finding.at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    by = f" by {finding.actor}" if finding.actor else ""
    return f"position {finding.position}  {when}  {finding.summary}{by}: {finding.problem}"
