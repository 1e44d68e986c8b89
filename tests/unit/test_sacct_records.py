"""`ingest --format sacct` reads ordinary lines by a fast path (sacct_jobs._FastLines) and
every other line by the reader proper, in pieces read by copies of one reader (as ingest's
helper processes read them): the items, the counts of steps and unfinished jobs, and every
refusal (even an exception the reader lets escape) must be those of the reader proper alone,
reading the whole input in one pass (OracleRecords below), for any input."""

from __future__ import annotations

import pickle
import random
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InvalidValue
from ledger.ingest import RejectedLine
from ledger.slurm._lines import LineError
from ledger.slurm.sacct import NO_HEADER, SacctHeaderError, SacctReader
from ledger.slurm.sacct_jobs import Item, SacctRecords, ingest_record

ZONES = ("UTC", "Europe/Berlin")


class OracleRecords:
    """SacctRecords as it was before the fast path: every line through SacctReader.read (a
    validated SacctJob) and ingest_record."""

    def __init__(self, lines: Iterable[str], timezone: str, name: str) -> None:
        self.lines = lines
        self.reader = SacctReader(timezone)
        self.name = name

    def __iter__(self) -> Iterator[Item]:
        for number, line in enumerate(self.lines, start=1):
            try:
                job = self.reader.read(number, line)
                yield "" if job is None else ingest_record(job)
            except SacctHeaderError as err:
                raise InvalidValue(
                    f"{self.name}: line {err.number}: {err.reason}; nothing recorded"
                ) from None
            except LineError as err:
                yield RejectedLine(str(err))
        if self.reader.header is None:
            raise InvalidValue(f"{self.name}: {NO_HEADER}; nothing recorded")


def _shown(item: Item) -> str:
    # repr, not ==: 1 == 1.0 and dicts equal in another key order would hide a difference
    # that reaches the recorded event.
    return repr(item)


def _oracle(lines: list[str], zone: str) -> tuple[list[str], Counter[str]]:
    records = OracleRecords(lines, zone, "in.txt")
    shown: list[str] = []
    try:
        shown.extend(_shown(item) for item in records)
    except Exception as exc:  # the reader's own escapes (int('²')) must escape alike
        shown.append(f"raised {type(exc).__name__}: {exc}")
    skipped = records.reader.unfinished.copy()
    if records.reader.steps:
        skipped["steps"] = records.reader.steps
    return shown, skipped


def _read_as_ingest(lines: list[str], zone: str, piece: int) -> tuple[list[str], Counter[str]]:
    """What ingest makes of `lines`: the header read by SacctRecords.split, each later piece
    of `piece` lines by a fresh copy of its SacctLines, as each helper process has one."""
    shown: list[str] = []
    skipped: Counter[str] = Counter()
    try:
        read, rest = SacctRecords(lines, zone, "in.txt").split()
        numbered = list(rest)
        helper = pickle.dumps(read)
        for at in range(0, len(numbered), piece):
            items, kinds = pickle.loads(helper).items(numbered[at : at + piece], at + 1)
            shown.extend(_shown(item) for item in items)
            skipped += kinds
    except Exception as exc:
        shown.append(f"raised {type(exc).__name__}: {exc}")
    return shown, skipped


def _refused_whole(outcome: tuple[list[str], Counter[str]]) -> tuple[list[str], Counter[str]]:
    """An input whose reading raised is refused whole, whatever its items before the error
    were (ingest reads the header first, and a helper's error ends its piece): the error
    alone."""
    shown, skipped = outcome
    if shown and shown[-1].startswith("raised "):
        return shown[-1:], Counter()
    return shown, skipped


def _same(lines: list[str], zone: str) -> None:
    oracle = _refused_whole(_oracle(list(lines), zone))
    for piece in (len(lines) or 1, 7):
        assert _refused_whole(_read_as_ingest(list(lines), zone, piece)) == oracle


# --- generated lines ----------------------------------------------------------------------------

COLUMNS = (
    "JobIDRaw",
    "JobID",
    "Cluster",
    "User",
    "UID",
    "Account",
    "Partition",
    "QOS",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "NNodes",
    "NCPUS",
    "AllocTRES",
    "State",
    "Priority",
    "Timelimit",
    "Elapsed",
)
REQUIRED = {"User", "Account", "Partition", "Start", "End", "State"}

DAYS = ("2026-01-07", "2026-03-29", "2026-10-25", "2026-02-30", "2026-12-31", "١٩٧٠-01-02")
MINUTES = ("00:00", "02:30", "23:59", "24:00", "13:7٣", "19:17")
SECONDS = ("00", "05", "59", "60", "7")
ODD_TIMES = ("Unknown", "None", "", "1767830403", "-5", "0", "1e9", "2026-01-07 10:00:00", "x")
IDS = ("1", "42", "123_4", "123+0", "123.batch", "7.extern", "", "abc", "١٢٣", "0x1f")
STATES = (
    "COMPLETED",
    "COMPLETED",
    "FAILED",
    "CANCELLED by 0",
    "CANCELLED by 1234",
    " TIMEOUT ",
    "OUT_OF_MEMORY+",
    "RUNNING",
    "PENDING",
    "REQUEUED",
    "completed",
    "",
    "CANCELLED by x",
)
TRES = (
    "billing=8,cpu=8,mem=32G,node=1",
    "cpu=4,gres/gpu=2,gres/gpu:a100=2,mem=2.50G,node=1",
    "",
    "cpu=1.5,node=1",
    "cpu=8,cpu=8",
    "cpu",
    "CPU=16,Mem=1T,Node=2",
    "cpu=-1",
)
COUNTS = ("", "0", "1", "8", "32", "x", "-1", "١٢", " 4 ")
NAMES = ("alice", "bob", "", " carol ", "dave\u200b")
LIMITS = ("", "UNLIMITED", "Partition_Limit", "60", "1-00:00:00", "00:30:00", "bogus", "-5")


def _time_text(rng: random.Random) -> str:
    if rng.random() < 0.8:
        day = rng.choice(DAYS) if rng.random() < 0.3 else rng.choice(DAYS[:3])
        minute = rng.choice(MINUTES) if rng.random() < 0.3 else f"{rng.randrange(24):02d}:00"
        second = rng.choice(SECONDS) if rng.random() < 0.3 else f"{rng.randrange(60):02d}"
        return f"{day}T{minute}:{second}"
    return rng.choice(ODD_TIMES)


def _value(column: str, rng: random.Random) -> str:
    choices: dict[str, tuple[str, ...]] = {
        "JobIDRaw": IDS,
        "JobID": IDS,
        "Cluster": ("slurm", "", "c2"),
        "User": NAMES,
        "UID": COUNTS,
        "Account": ("bank1", "", "BankTwo"),
        "Partition": ("batch", "", "gpu"),
        "QOS": ("normal", "", "high"),
        "NNodes": COUNTS,
        "NCPUS": COUNTS,
        "AllocTRES": TRES,
        "State": STATES,
        "Priority": COUNTS,
        "Timelimit": LIMITS,
        "Elapsed": ("00:01:00", "anything"),
    }
    if column in ("Submit", "Eligible", "Start", "End"):
        return _time_text(rng)
    return rng.choice(choices[column])


def _file(seed: int, n_lines: int) -> tuple[list[str], str]:
    rng = random.Random(seed)
    kept = [c for c in COLUMNS if c in REQUIRED or rng.random() < 0.7]
    if "JobIDRaw" not in kept and "JobID" not in kept:
        kept.append(rng.choice(("JobIDRaw", "JobID")))
    if rng.random() < 0.9 and "AllocTRES" not in kept and "NCPUS" not in kept:
        kept.append("NCPUS")  # now and then a header that lacks a column
    rng.shuffle(kept)
    trailing = "|" if rng.random() < 0.3 else ""
    header = "|".join(c.lower() if rng.random() < 0.2 else c for c in kept) + trailing
    lines = [header + "\n"]
    for _ in range(n_lines):
        roll = rng.random()
        if roll < 0.03:
            lines.append("\n")
        elif roll < 0.06:
            lines.append("|".join(_value(c, rng) for c in kept[:-1]) + trailing + "\n")
        elif roll < 0.08:
            lines.append("|".join(_value(c, rng) for c in kept) + "\r\n")  # -p without its |
        else:
            # Mostly good lines, so that the fast path's caches are filled and recombined.
            lines.append("|".join(_good(c, rng) for c in kept) + trailing + "\n")
    return lines, rng.choice(ZONES)


def _good(column: str, rng: random.Random) -> str:
    if rng.random() < 0.1:
        return _value(column, rng)
    good: dict[str, str] = {
        "JobIDRaw": str(rng.randrange(1, 10**6)),
        "JobID": rng.choice(("", str(rng.randrange(1, 10**6)), "55_3")),
        "User": "alice",
        "Account": "bank1",
        "State": rng.choice(("COMPLETED", "CANCELLED by 0", "RUNNING", "FAILED")),
        "AllocTRES": rng.choice(TRES[:3]),
        "NCPUS": str(rng.randrange(1, 64)),
        "NNodes": "1",
        "UID": "1000",
        "Priority": str(rng.randrange(10**6)),
        "Timelimit": rng.choice(LIMITS[:6]),
    }
    if column in ("Submit", "Eligible", "Start"):
        return f"2026-01-0{rng.randrange(1, 4)}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:00"
    if column == "End":
        return f"2026-01-0{rng.randrange(5, 8)}T{rng.randrange(24):02d}:00:{rng.randrange(60):02d}"
    return good.get(column, _value(column, rng))


@settings(deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 60))
def test_the_fast_path_reads_every_line_as_the_reader_does(seed: int, n_lines: int) -> None:
    lines, zone = _file(seed, n_lines)
    _same(lines, zone)


@pytest.mark.parametrize("seed", range(8))
def test_a_long_varied_file_reads_as_the_reader_reads_it(seed: int) -> None:
    lines, zone = _file(seed, 3000)
    _same(lines, zone)


@pytest.mark.parametrize("column", ["NCPUS", "UID", "JobIDRaw"])
def test_a_digit_that_is_not_a_decimal_is_refused_alike(column: str) -> None:
    """'²' is a digit (str.isdigit) that int() refuses: both paths refuse its line as not a
    whole number, naming the value, instead of letting int()'s ValueError out."""
    values = {"JobIDRaw": "5", "User": "u", "Account": "a", "Partition": "p", "UID": "7"}
    values |= {"Start": "2026-01-01T00:00:00", "End": "2026-01-01T01:00:00", "NCPUS": "1"}
    values |= {"State": "COMPLETED", column: "²"}
    header = "|".join(values)
    good = "|".join(v if c != column else "1" for c, v in values.items())
    _same([header, good, "|".join(values.values()), good], "UTC")


@pytest.mark.parametrize("zone", ZONES)
def test_a_dst_day_reads_as_the_reader_reads_it(zone: str) -> None:
    """Every minute of the days Berlin's clocks skip and repeat an hour, at second 30."""
    header = "JobIDRaw|User|Account|Partition|Start|End|NCPUS|State\n"
    lines = [header]
    for day in ("2026-03-29", "2026-10-25"):
        for minute in range(24 * 60):
            wall = f"{day}T{minute // 60:02d}:{minute % 60:02d}:30"
            lines.append(f"{minute + 1}|alice|bank1|batch|{wall}|{wall}|1|COMPLETED\n")
    _same(lines, zone)


def test_ordinary_lines_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Else the tests above would compare the reader with itself."""
    read = SacctReader.read
    calls: list[int] = []

    def counted(self: SacctReader, number: int, line: str) -> Any:
        calls.append(number)
        return read(self, number, line)

    monkeypatch.setattr(SacctReader, "read", counted)
    header = "JobIDRaw|User|Account|Partition|Submit|Start|End|AllocTRES|State\n"
    lines = [header] + [
        f"{n}|alice|bank1|batch|2026-01-01T00:00:{n % 60:02d}|2026-01-01T00:0{n % 10}:00|"
        f"2026-01-01T01:{n % 60:02d}:00|cpu=4,mem=8G,node=1|COMPLETED\n"
        for n in range(1, 500)
    ]
    reader, rest = SacctRecords(lines, "UTC", "in.txt").split()
    items, _skipped = reader.items(list(rest), 1)
    assert len([i for i in items if isinstance(i, dict)]) == 499
    assert calls == [1]  # the header alone
