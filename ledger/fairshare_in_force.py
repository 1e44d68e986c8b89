"""The fair-share in force: what an association has between walks, and what a walk leaves to
the associations it does not rank (docs/semantics.md, "Fair-share: flux-accounting's weighted
walk").

A walk (update-fshare) ranks the active associations only. The rules for everything else:

* A new association has NEW_ASSOCIATION_FAIRSHARE until a walk ranks it.
* An association a walk leaves out (inactive, or in an inactive bank) keeps the value the last
  walk that ranked it gave, as long as it is the association that walk saw: a removed and
  re-added association is a new one (its creation time differs) and starts again at 0.5.
* An opening balance (an import) brings the value its source had stored, and add-user/edit-user
  --fairshare (FairshareSet) sets one by hand; that value is in force until a walk after it
  ranks the association.

Pure: the projector (checkpoints and the association table) and time travel (as-of reads,
explain-job, fairshare-history) call these same functions, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

NEW_ASSOCIATION_FAIRSHARE = 0.5  # flux-accounting's association_table default: no walk yet


class Given(Protocol):
    """What a walk left one association with (a checkpoint's row is one)."""

    @property
    def creation_time(self) -> float:
        """The association's creation time: which association the value belongs to."""

    @property
    def fairshare(self) -> float: ...

    @property
    def source(self) -> int | None:
        """The log position of the walk that gave `fairshare`; None: no walk has ranked it."""


class Kept(NamedTuple):
    """A plain Given: a value a walk gave or left. A named tuple: a walk makes one per
    association (10,000 at a large site), at a third of a frozen dataclass's cost."""

    creation_time: float
    fairshare: float
    source: int | None


def walk_gives(
    walked: float | None, position: int, before: Given | None, creation_time: float
) -> tuple[float, int | None]:
    """(value, source) of one association after the walk at `position`: the walk's value
    (`walked`) if the walk ranked it, else carried_over's from what it had before (`before`)."""
    if walked is not None:
        return walked, position
    kept = carried_over(before, creation_time)
    return kept.fairshare, kept.source


def carried_over(before: Given | None, creation_time: float) -> Given:
    """What a walk that did not rank an association leaves it: the value it had, if it is the
    same association (same creation time), else a new association's."""
    if before is not None and before.creation_time == creation_time:
        return before
    return Kept(creation_time, NEW_ASSOCIATION_FAIRSHARE, None)


def shown_after_walk(walked: float | None, shown: float | None) -> float:
    """The value an association's row shows after a walk: the walk's if it ranked it, else the
    value the row showed (a value in force stays in force), else a new association's. A row
    lives as long as its association, so the row itself tells a re-added association apart."""
    if walked is not None:
        return walked
    return shown if shown is not None else NEW_ASSOCIATION_FAIRSHARE


@dataclass(frozen=True)
class InForce:
    """An association's fair-share in force at a log position, and where it came from."""

    value: float
    source: int | None  # the position of the walk that gave it
    imported: int | None  # the position of the opening balance that brought it over


def in_force(given: Given | None, ranked_at: int, brought: tuple[int, float] | None) -> InForce:
    """The value in force: the one the last walk that ranked the association gave it (an
    inactive one keeps it), else a new association's; a stored value (an opening balance's, or
    one set with --fairshare) wins until a walk after it ranks the association.

    `given`: what the walk in force (at position `ranked_at`; 0 before any) left the
    association; `brought`: the latest stored value's (position, value) for it."""
    if given is None or given.source is None:
        if brought is not None:
            return InForce(brought[1], None, brought[0])
        return InForce(NEW_ASSOCIATION_FAIRSHARE, None, None)
    # Compared with the walk that gave the value, not the walk in force: a walk that left the
    # association out (inactive) does not undo a value stored after the one that ranked it,
    # as it does not in the association's row (shown_after_walk).
    if brought is not None and brought[0] > given.source:
        return InForce(brought[1], None, brought[0])
    return InForce(given.fairshare, given.source, None)
