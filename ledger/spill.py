"""Rows held on disk between reading them and using them, a batch in memory at a time.

For what needs every row of a read before it can use the first: a padded listing cannot print
before its widest value is known, a listing that fails on its last row must print nothing, and
an audit that queries the store for each job cannot hold a stream of the jobs open meanwhile.
Holding the rows in memory took 2.6 GB for the 1.2 million jobs of one listing.
"""

from __future__ import annotations

import contextlib
import marshal
import tempfile
from collections.abc import Iterator
from typing import Any

from ledger.errors import NoScratchSpace

BATCH = 10_000  # items per marshalled batch: one batch in memory at a time


class Spill:
    """Items (tuples of str, int, float and None, or strings) appended, then replayed in
    order, once."""

    def __init__(self) -> None:
        try:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by the Spill itself)
        except OSError as err:
            raise no_room(err) from None
        self._batch: list[Any] = []
        self.count = 0

    def add(self, item: Any) -> None:
        self._batch.append(item)
        self.count += 1
        if len(self._batch) >= BATCH:
            self._write()

    def replay(self) -> Iterator[Any]:
        self._write()
        try:
            self._file.seek(0)  # writes out what the file's buffer holds
        except OSError as err:
            raise no_room(err) from None
        try:
            while True:
                try:
                    batch = marshal.load(self._file)
                except EOFError:
                    return
                yield from batch
        finally:
            self._file.close()

    def _write(self) -> None:
        if not self._batch:
            return
        try:
            marshal.dump(self._batch, self._file)
        except OSError as err:
            raise no_room(err) from None
        self._batch = []

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *_exc: object) -> None:
        # A full disk while leaving on an error: that error is the one to report.
        with contextlib.suppress(OSError):
            self._file.close()


def no_room(err: BaseException) -> NoScratchSpace:
    """The one line for a temporary file that could not be written."""
    reason = getattr(err, "strerror", None) or str(err)
    return NoScratchSpace(
        f"cannot write a temporary file in {tempfile.gettempdir()}: {reason} "
        "(set TMPDIR to a directory with room)"
    )
