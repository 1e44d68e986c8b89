"""What `fairledger verify` prints: the chain's head to keep elsewhere, and the read models'
comparison with a rebuild (the demo's last step prints the same)."""

from __future__ import annotations

from ledger.usecases.admin import VerifyReport


def verified_lines(report: VerifyReport) -> list[str]:
    result = report.verified
    lines = [
        f"log: {result.events} events linked, head at position {result.head_position} "
        f"link {result.head_link}"
    ]
    if result.unlinked:
        lines.append(
            f"log: {result.unlinked} events written before the hash chain existed; the next "
            "change links them"
        )
    lines.append(
        f"read models: {result.tables} tables equal a rebuild from the log ({report.seconds:.2f}s)"
    )
    return lines
