"""`-o/--format` for job records, as flux-accounting's view-job-records reads it (its
JobsFormatter is flux-core's `flux.util.OutputFormat`): Python format fields over the record's
columns, `{jobid.FORM}` for every Flux job ID form, flux's conversions `!d` (datetime), `!D`
(ISO 8601), `!F` (Flux Standard Duration), `!H` (h:mm:ss), `!P` (percent), and its spec
suffixes `h` (an empty value shows as "-") and `+` (mark a truncated value). The header is the
same format over the column names with each spec cut to its alignment and width.

Not supported: OutputFormat's `?:`/`+:` column sentinels and `sort:` prefix (flux-accounting's
documentation does not offer them for view-job-records).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ledger.bounds import printable
from ledger.errors import InvalidValue
from ledger.job_ids import JOB_ID_FORMS, FluxJobId
from ledger.spill import Spill

JOBID_FIELDS = [f"jobid.{form}" for form in JOB_ID_FORMS]

# flux.util.OutputFormat.FormatSpec: the parts of a standard format spec, to keep only the
# alignment and width for the header.
_SPEC = re.compile(
    r"(?:(?P<fill>[\s\S])?(?P<align>[<>=^]))?(?P<sign>[- +])?z?#?0?(?P<width>\d+)?[_,]?"
    r"(?:\.\d+)?[bcdeEfFgGnosxX%]?h?\+?"
)
_FLUX_CONVERSIONS = "dDFHP"
_STANDARD_CONVERSIONS = "rsa"


def _fsd(seconds: float) -> str:
    """Flux Standard Duration as flux.util.fsd prints it."""
    if math.isinf(seconds):
        return "inf"
    if seconds < 1.0e-3:
        return "0s"
    if seconds < 10.0:
        return f"{seconds:.03f}s"
    for limit, unit, size in ((60.0, "s", 1.0), (3600.0, "m", 60.0), (86400.0, "h", 3600.0)):
        if seconds < limit:
            return f"{seconds / size:.4g}{unit}"
    return f"{seconds / 86400.0:.4g}d"


def _hms(seconds: float) -> str:
    # flux rounds a nonzero duration under a second up, so it never shows as zero.
    return str(timedelta(seconds=round(1 if 0 < seconds < 1 else seconds)))


def _percent(value: float) -> str:
    value *= 100
    return f"{value:.2f}%" if 0 < value < 1 else f"{value:.3g}%"


def _local_iso(value: float) -> str:
    return datetime.fromtimestamp(value).strftime("%Y-%m-%dT%H:%M:%S") if value else ""


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "d": lambda v: datetime.fromtimestamp(v or 0.0),
    "D": _local_iso,
    "F": lambda v: "" if v == "" else _fsd(v),
    "H": lambda v: "" if v == "" else _hms(v),
    "P": lambda v: "" if v == "" else _percent(v),
}


_STANDARD: dict[str, Callable[[Any], str]] = {"r": repr, "s": str, "a": ascii}


def _empty_outputs() -> tuple[str, ...]:
    """What flux's `h` suffix shows as "-" (flux.util.empty_outputs)."""
    epoch = datetime.fromtimestamp(0.0).strftime("%Y-%m-%dT%H:%M:%S")
    return ("", "0s", "0.0", "0:00:00", "1970-01-01T00:00:00", epoch)


class RecordFormat:
    """A checked `-o` format over `columns` (plus every `jobid.FORM`)."""

    def __init__(self, fmt: str, columns: Sequence[str]) -> None:
        self.fmt = fmt
        allowed = list(columns) + JOBID_FIELDS
        try:
            self.parts = [
                (text or "", field, spec or "", conv)
                for text, field, spec, conv in string.Formatter().parse(fmt)
            ]
        except ValueError as err:
            raise InvalidValue(f"invalid format string {fmt!r}: {err}") from None
        for _text, field, spec, conv in self.parts:
            if field is None:
                continue
            if field not in allowed:
                # flux-accounting's words (scripts grep for them), then what would do.
                raise InvalidValue(
                    f"Unknown format field: {field or '{}'} (available: {', '.join(allowed)})"
                )
            if "{" in spec:
                raise InvalidValue(f"invalid format string {fmt!r}: nested fields in a spec")
            if conv is not None and conv not in _FLUX_CONVERSIONS + _STANDARD_CONVERSIONS:
                raise InvalidValue(
                    f"invalid format string {fmt!r}: unknown conversion !{conv} "
                    f"(one of !{', !'.join(_FLUX_CONVERSIONS + _STANDARD_CONVERSIONS)})"
                )

    def header(self) -> str:
        out = []
        for text, field, spec, _conv in self.parts:
            out.append(text)
            if field is not None:
                match = _SPEC.fullmatch(spec)
                kept = f"{match['align'] or ''}{match['width'] or ''}" if match else ""
                out.append(format(field, kept))
        return "".join(out)

    def line(self, row: Mapping[str, Any]) -> str:
        out = []
        for text, field, spec, conv in self.parts:
            out.append(text)
            if field is not None:
                out.append(self._field(row, field, spec, conv))
        return "".join(out)

    def spooled(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
        """The header and one line per row; lines that come out blank are left out, as
        flux's build_table does. Each row is formatted as it is read and its line held on disk
        until the last: a listing of millions of jobs holds none of them, and one the format
        refuses prints nothing."""
        with Spill() as spill:
            for row in rows:
                line = self.line(row)
                if line.strip():
                    spill.add(line)
            yield self.header()
            yield from spill.replay()

    def _field(self, row: Mapping[str, Any], field: str, spec: str, conv: str | None) -> str:
        value = _value(row, field)
        try:
            if conv in _CONVERT:
                value = _CONVERT[conv](value)
            elif conv is not None:
                value = _STANDARD[conv](value)
            truncate = spec.endswith("+")
            spec = spec.removesuffix("+")
            if spec.endswith("h") and not isinstance(value, datetime):
                value = "-" if str(value) in _empty_outputs() else str(value)
                spec = spec[:-1] + "s"
            shown = format(value, spec)
        except (ValueError, TypeError, OverflowError, OSError) as err:
            raise InvalidValue(
                f"invalid format string {self.fmt!r}: field {field}: {err}"
            ) from None
        if truncate and len(shown) < len(str(value)):
            shown = shown[:-1] + "+"
        return shown


def _value(row: Mapping[str, Any], field: str) -> Any:
    if field == "jobid" and "jobid" in row:
        return row["jobid"]  # as its scheduler writes it: F58 at a Flux site, decimal at Slurm's
    if field == "jobid" or field.startswith("jobid."):
        job_id = FluxJobId(int(row["id"]))
        return job_id if field == "jobid" else getattr(job_id, field.split(".", 1)[1])
    value = row[field]
    if value is None:
        return ""  # flux-accounting shows a job without project or bank as ""
    # Names written before ledger.bounds refused control characters are shown escaped.
    return printable(value) if isinstance(value, str) else value
