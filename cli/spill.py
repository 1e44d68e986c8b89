"""A listing's lines held on disk between reading them and printing them.

A padded table can print nothing before its widest value is known, and a listing that fails on
its last row must print nothing at all. Holding every row until then took 2.7 GB for 1.1
million jobs; a temporary file holds them instead, written and read back a batch at a time.
"""

from __future__ import annotations

import marshal
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

import click

BATCH = 10_000  # items per marshalled batch: one batch in memory at a time
ECHO_LINES = 1_000  # lines per write to the terminal


class Spill:
    """Items (tuples of str, int, float and None, or strings) appended, then replayed in
    order, once."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the Spill itself)
        self._batch: list[Any] = []
        self.count = 0

    def add(self, item: Any) -> None:
        self._batch.append(item)
        self.count += 1
        if len(self._batch) >= BATCH:
            marshal.dump(self._batch, self._file)
            self._batch = []

    def replay(self) -> Iterator[Any]:
        if self._batch:
            marshal.dump(self._batch, self._file)
            self._batch = []
        self._file.seek(0)
        try:
            while True:
                try:
                    batch = marshal.load(self._file)
                except EOFError:
                    return
                yield from batch
        finally:
            self._file.close()

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._file.close()


def echo_lines(lines: Iterable[str]) -> None:
    """Each line and its newline, to standard output a thousand lines per write."""
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= ECHO_LINES:
            click.echo("\n".join(chunk))
            chunk = []
    if chunk:
        click.echo("\n".join(chunk))
