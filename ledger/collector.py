"""How often CPython's cycle collector runs in a process of fairledger's, a command's or an
ingest helper's, and what it walks (the use cases and the projector both ask)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

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


def set_aside() -> None:
    """Leave every object alive now out of the collections to come, until take_back: called
    once a command has loaded the Site it starts from. That state (10,000 associations: about
    100,000 objects, with the modules imported to load it) lives until the command ends, and
    while young it was walked by the first collections after it, then again by each older one:
    24-40 ms of GC in a 0.36-0.50 s update-usage, update-fshare or cron on a 1M-job PostgreSQL
    ledger (gc.callbacks), 4-6 ms once set aside. The command's own objects are still
    collected: only what is alive now is set aside (gc.freeze)."""
    gc.freeze()


def take_back() -> None:
    """Return what set_aside left out to the oldest generation (gc.unfreeze), where a later
    full collection finds any cycle among it: a process that runs many commands (a test suite,
    the bench) would otherwise keep every cycle alive at each set_aside for good."""
    gc.unfreeze()


@contextmanager
def paused() -> Iterator[None]:
    """No collection inside the block (gc.disable), for work bounded by the site's size that
    holds all it allocates to the end: an update's usage, walk and checkpoint, a row per
    association each (10,000: more than 100,000 objects alive at once), which set off one
    collection that walked them all for nothing (10.6-13.4 ms of a 0.5 s cron cycle). What
    they leave is collected after. Not for a reading of every job."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
