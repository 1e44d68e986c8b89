"""Shared by the format parsers: collecting one error line per offending input line."""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger.errors import InvalidValue


@dataclass
class LineErrors:
    """Errors found so far, each `<what> line N: message`; `raise_if_any` raises them all at
    once as one InvalidValue, one line per offending input line (the first error of a line)."""

    what: str
    lines: dict[int, str] = field(default_factory=dict)

    def add(self, number: int, message: str) -> None:
        self.lines.setdefault(number, f"{self.what} line {number}: {message}")

    def raise_if_any(self) -> None:
        if self.lines:
            raise InvalidValue("\n".join(self.lines[n] for n in sorted(self.lines)))


class LineError(ValueError):
    """Raised inside a parser for one line; caught and recorded with the line's number."""


def split_parsable(line: str, delimiter: str, trailing: bool) -> list[str]:
    """The fields of one `-p`/`-P` line; `trailing`: the line ends with a delimiter (`-p`)."""
    if trailing:
        if not line.endswith(delimiter):
            raise LineError(f"does not end with {delimiter!r} as the header does: {line!r}")
        line = line[: -len(delimiter)]
    return line.split(delimiter)
