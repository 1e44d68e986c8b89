"""Rows held on disk between reading them and using them, a batch in memory at a time.

For what needs every row of a read before it can use the first: a padded listing cannot print
before its widest value is known, a listing that fails on its last row must print nothing, and
an audit that queries the store for each job cannot hold a stream of the jobs open meanwhile.
Holding the rows in memory took 2.6 GB for the 1.2 million jobs of one listing.
"""

from __future__ import annotations

import marshal
import tempfile
from collections.abc import Iterator
from typing import Any

BATCH = 10_000  # items per marshalled batch: one batch in memory at a time


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
