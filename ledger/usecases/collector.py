"""How often CPython's cycle collector runs in a process of fairledger's: a command's, or an
ingest helper's."""

from __future__ import annotations

import gc

# The youngest generation is collected after this many net allocations (CPython's default:
# 700). A command allocates millions of short-lived objects that hold no cycle (job records,
# rows, tuples) beside a long-lived site state of 10,000 associations, and the collections that
# reach the older generations walk that state again and again for nothing: 0.3 s of a 1.3 s
# Fair Tree update at that size, and 2 µs of an ingest helper's 14.5 µs a line. Cycles are
# still collected, only less often.
YOUNG_COLLECTION_THRESHOLD = 100_000


def collect_less() -> None:
    """Raise the collector's first threshold to YOUNG_COLLECTION_THRESHOLD for this process
    (never lower it)."""
    young, *older = gc.get_threshold()
    if young < YOUNG_COLLECTION_THRESHOLD:
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *older)
