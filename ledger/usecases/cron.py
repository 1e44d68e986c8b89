"""The accounting cron in one process: record the new completed jobs (what `ingest` does), bring
usage and fair-share up to date (what `update-usage` then `update-fshare` do), and write the
config the scheduler loads (what `export-json` prints), with one start-up instead of four.

Each step is the separate command's own use case, so the numbers are theirs. The two updates are
one transaction: the same two events, at the same time, that the separate commands record. A bad
job line records nothing and stops the cycle before the updates; the export is written last, and
whole (a scheduler reading it never sees half a file)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ledger.errors import InvalidValue
from ledger.flux_accounting.payloads import strict_json
from ledger.usecases.priority import plugin_config
from ledger.usecases.session import Session
from ledger.usecases.updates import update_both

if TYPE_CHECKING:
    from ledger.usecases.ingest import IngestNotes, IngestResult


@dataclass(frozen=True)
class JobInput:
    """The jobs a cycle records: `lines` read from `name` in format `fmt` (as `ingest` takes
    them); `skip_invalid` records the valid lines and sets the bad ones aside."""

    lines: Iterator[Any]
    name: str
    fmt: str
    skip_invalid: bool = False


@dataclass(frozen=True)
class CronResult:
    ingested: IngestResult | None  # None: no input was given
    updated_at: datetime  # the time of both updates
    exported_to: str | None


def cron(
    s: Session,
    jobs: JobInput | None = None,
    export_json: str | None = None,
    actor: str | None = None,
    reason: str | None = None,
    notes: IngestNotes | None = None,
) -> CronResult:
    """One cycle: ingest `jobs` (if any), update usage and fair-share, then write the plugin's
    config to the file `export_json` (if given)."""
    if export_json is not None:
        _check_writable(export_json)  # refused before anything is recorded
    ingested = None
    if jobs is not None:
        from ledger.usecases.ingest import ingest  # a cycle without jobs need not import it

        ingested = ingest(
            s, jobs.lines, jobs.name, jobs.fmt, jobs.skip_invalid, actor, reason, notes
        )

    at = update_both(s, actor, reason)
    if export_json is not None:
        _write_whole(export_json, strict_json(plugin_config(s)) + "\n")
    return CronResult(ingested, at, export_json)


def _check_writable(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InvalidValue(f"--export-json {path}: is a directory (give a file name)")
    if not os.path.isdir(folder):
        raise InvalidValue(f"--export-json {path}: no such directory: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidValue(f"--export-json {path}: cannot write in {folder}")


def _write_whole(path: str, text: str) -> None:
    """`text` into `path` through a file beside it renamed over it: a reader sees the old
    config or the new one, never a part."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        mode = _mode_for(path)
        handle, scratch = tempfile.mkstemp(dir=folder, prefix=".fairledger-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(scratch, mode)
            os.replace(scratch, path)
        except BaseException:
            os.unlink(scratch)
            raise
    except OSError as err:
        raise InvalidValue(
            f"--export-json {path}: {err.strerror or err} (usage and fair-share are updated; "
            "'fairledger export-json' writes the config again)"
        ) from None


def _mode_for(path: str) -> int:
    """The file's mode if it exists, else what the umask gives a new file (as a shell's
    `export-json > PATH` would): mkstemp's 0600 could hide it from the scheduler's user."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
