"""fairshare-emulate: what update-fshare would give if some usage were different, from the
ledger (now, or as of a past moment) or from a flux-accounting `export-db -F` file. Nothing is
recorded."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ledger.clock import AsOf
from ledger.errors import InvalidValue
from ledger.fairshare_emulation import (
    EmulatedShare,
    EmulatedTree,
    UsageChange,
    emulate,
    tree_from_export,
    tree_from_walk_input,
    with_changes,
)
from ledger.site_usage import fairshare_tree
from ledger.usecases.session import Session
from projections.queries import as_of as as_of_view


def emulate_ledger(
    s: Session, changes: Sequence[UsageChange], as_of: AsOf | None = None
) -> list[EmulatedShare]:
    """The active tree with each association's usage at the moment asked (default: the
    ledger's now), as update-fshare would walk it, with `changes` applied."""
    moment = s.moment(as_of if as_of is not None else AsOf(ago=0.0))
    if as_of is not None:
        s.warn(moment.describe())
    state = as_of_view.site_state_at(s.ledger, moment.site_version)
    usage = as_of_view.usage_then(s.conn, state, moment.asked, moment.position)
    return _emulated(tree_from_walk_input(fairshare_tree(state, usage)), changes)


def emulate_file(path: str, changes: Sequence[UsageChange]) -> list[EmulatedShare]:
    """The tree of a flux-accounting `export-db -F` file, with `changes` applied."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise InvalidValue(
            f"input file not found: {path}", exception_name="FileNotFoundError"
        ) from None
    except IsADirectoryError:
        raise InvalidValue(f"input file is a directory: {path}") from None
    except UnicodeDecodeError as err:
        raise InvalidValue(f"input file {path} is not UTF-8: {err.reason}") from None
    except json.JSONDecodeError as err:
        raise InvalidValue(
            f"invalid JSON in input file: {err}", exception_name="JSONDecodeError"
        ) from None
    except OSError as err:
        raise InvalidValue(f"cannot read input file {path}: {err.strerror}") from None
    return _emulated(tree_from_export(data), changes)


def _emulated(tree: EmulatedTree, changes: Sequence[UsageChange]) -> list[EmulatedShare]:
    shares = emulate(with_changes(tree, changes))
    if not shares:
        raise InvalidValue("no users found in input")  # flux-accounting's words
    return shares
