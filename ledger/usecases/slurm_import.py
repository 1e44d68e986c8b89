"""import-slurm: a Slurm site's tree from `sacctmgr dump` (and, with `--usage`, the usage
`sshare` reports) recorded as ordinary Site events in one transaction.

* A ledger still on the weighted walk is switched to Fair Tree first (Slurm's default
  algorithm); a ledger already on fair-tree or classic keeps its algorithm.
* The Cluster line is the root bank `root` (Slurm's root association), with its Fairshare.
* Accounts become banks under their Parent with their Fairshare, in the file's order (a parent
  comes before its children); users become associations (user, account) with their
  Fairshare. `Fairshare=parent` and 2147483647 are both stored as `PARENT`. Then each user's
  DefaultAccount becomes the user's default bank.
* A user's uid is not in a dump: it is the host's (as add-user finds it), else 65534.
* `--usage`: each user row's RawUsage (a fraction allowed) is an opening balance
  (UsageBalanceImported) of that association at the import moment; account rows are not read,
  since an account's usage is the sum of its users'.
* Each QOS line becomes a QOS (Priority, UsageFactor, Flags, Description), before the tree;
  each user association takes its QOS list and DefaultQOS (its own, else inherited from its
  accounts or the Cluster line, as slurmdbd inherits them).
* What the ledger does not model is listed in the report as ignored: limits (on QOS lines
  too), Description, Organization, AdminLevel, a per-partition association's Partition.
* A malformed file, a line the ledger refuses (a parent that is not defined, ...), a usage row
  naming an association the dump lacks: one line each, and nothing is recorded.
* The same dump (and usage file) again changes nothing and says so (SiteImported marks the
  import by the sha256 of both); a ledger that already holds a site is refused.
* `--conf`: the site's slurm.conf, recorded in the same transaction after the tree
  (ledger.usecases.slurm_conf_import; its PriorityFlags choose Fair Tree or classic in place of
  the switch above) and part of the sha256. Without a dump, `import_slurm_conf` applies it alone
  to the ledger's site.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ledger.errors import InvalidValue, LedgerError, NotFound, ProblemList
from ledger.site import Site, Stamp
from ledger.site_config import ALGORITHM_KEY, FAIR_TREE, WEIGHTED_WALK
from ledger.slurm.dump import DumpUser, SlurmDump, parse_dump
from ledger.slurm.sshare import SshareRow, parse_sshare
from ledger.slurm_shares import PARENT, ROOT
from ledger.usecases import slurm_conf_import
from ledger.usecases.session import Session
from ledger.usecases.slurm_conf_import import ConfImported, ConfSource
from ledger.usecases.users import host_userid

T = TypeVar("T")
COMMAND = "import-slurm"
SCHEMA = "sacctmgr dump"  # what SiteImported records as the source's layout
ROOT_BANK = ROOT  # Slurm's root association is the ledger's root bank, by the same name


@dataclass(frozen=True)
class AlreadyImported:
    """The same dump (and usage file) was imported before, at `at`: nothing changed."""

    file: str
    sha256: str
    at: float


@dataclass(frozen=True)
class Imported:
    """The site came over; `report` says what became what (JSON-ready)."""

    report: dict[str, Any]


SlurmImportOutcome = AlreadyImported | Imported


@dataclass(frozen=True)
class SlurmSource:
    """The files read and parsed, before anything is recorded."""

    dump_path: str
    dump: SlurmDump
    usage_path: str | None
    usage: tuple[SshareRow, ...]
    sha256: str
    conf: ConfSource | None = None

    @property
    def file(self) -> str:
        return os.path.basename(self.dump_path)


@dataclass
class _Applied:
    """What the import recorded, for the report; `problems` one line per refused input line."""

    qos: int = 0
    banks: int = 0
    associations: int = 0
    default_banks: int = 0
    balance: list[list[Any]] = field(default_factory=list)
    algorithm: list[str] | None = None  # [old, new] when the import chose Fair Tree
    problems: list[str] = field(default_factory=list)
    conf: dict[str, Any] | None = None  # what the slurm.conf changed (slurm_conf_import)


def import_slurm(
    s: Session,
    dump_path: str,
    usage_path: str | None = None,
    actor: str | None = None,
    reason: str | None = None,
    conf_path: str | None = None,
) -> SlurmImportOutcome:
    """Import the `sacctmgr dump` file at `dump_path` (and `sshare` output at `usage_path`, the
    slurm.conf at `conf_path`) into the ledger, which must exist and hold no site yet."""
    started = time.perf_counter()
    source = read_source(dump_path, usage_path, conf_path)
    return import_source(s, source, actor, reason, started)


def import_slurm_conf(
    s: Session, conf_path: str, actor: str | None = None, reason: str | None = None
) -> ConfImported:
    """The slurm.conf at `conf_path` applied to the ledger's site (any ledger: a weighted-walk
    one is switched to the file's algorithm); only what differs is recorded."""
    return slurm_conf_import.import_conf(s, conf_path, _read(conf_path), actor, reason)


def import_source(
    s: Session,
    source: SlurmSource,
    actor: str | None = None,
    reason: str | None = None,
    started: float | None = None,
) -> SlurmImportOutcome:
    """Import a dump already read and parsed (`read_source`, or `parse_source` of text held in
    memory, as the demo's); `started`: when the reading began, for the report's time."""
    started = time.perf_counter() if started is None else started
    state = s.ledger.state()
    if source.sha256 in state.imports:
        return AlreadyImported(source.file, source.sha256, state.imports[source.sha256]["at"])
    uids = {u.name: host_userid(u.name) for u in source.dump.users}
    applied = s.change(
        lambda site, stamp: _apply(site, stamp, source, uids),
        reason or default_reason(source),
        actor,
        source={"import": source.dump_path, "sha256": source.sha256},
    )
    if applied is None:  # another import of the same files committed first
        at = s.ledger.state().imports[source.sha256]["at"]
        return AlreadyImported(source.file, source.sha256, at)
    return Imported(_report(source, applied, time.perf_counter() - started))


def default_reason(source: SlurmSource) -> str:
    """The reason recorded when none is given: the command and the files it read."""
    conf = f" --conf {source.conf.file}" if source.conf else ""
    return f"{COMMAND} {source.file}{conf}"


def read_source(
    dump_path: str, usage_path: str | None, conf_path: str | None = None
) -> SlurmSource:
    """The files read and parsed; InvalidValue (one line per offending line) if one is
    malformed, before the ledger is touched."""
    dump_bytes = _read(dump_path)
    usage_bytes = None if usage_path is None else _read(usage_path)
    conf_bytes = None if conf_path is None else _read(conf_path)
    return parse_source(dump_path, dump_bytes, usage_path, usage_bytes, conf_path, conf_bytes)


def parse_source(
    dump_path: str,
    dump_bytes: bytes,
    usage_path: str | None = None,
    usage_bytes: bytes | None = None,
    conf_path: str | None = None,
    conf_bytes: bytes | None = None,
) -> SlurmSource:
    """The dump (and sshare output, slurm.conf) given as bytes, named by their paths, parsed
    and checked; InvalidValue (one line per offending line) if one is malformed."""
    dump = _parsed(parse_dump, _text(dump_bytes, dump_path))
    _check_one_association_per_account(dump)
    digest = hashlib.sha256(dump_bytes)
    rows: tuple[SshareRow, ...] = ()
    if usage_path is not None and usage_bytes is not None:
        rows = _parsed(parse_sshare, _text(usage_bytes, usage_path)).rows
        _check_usage_rows(rows, dump)
        digest.update(b"\0sshare\0" + usage_bytes)  # another usage file is another import
    conf = None
    if conf_path is not None and conf_bytes is not None:
        conf = slurm_conf_import.read_conf(conf_path, conf_bytes)
        digest.update(b"\0slurm.conf\0" + conf_bytes)  # likewise another slurm.conf
    return SlurmSource(dump_path, dump, usage_path, rows, digest.hexdigest(), conf)


def _parsed(parse: Callable[[str], T], text: str) -> T:
    """A parser's result; its errors (one line per offending line) shown line by line."""
    try:
        return parse(text)
    except InvalidValue as err:
        raise ProblemList(str(err)) from None


def _read(path: str) -> bytes:
    if not os.path.exists(path):
        raise NotFound(f"no such file: {path}")
    if os.path.isdir(path):
        raise InvalidValue(f"{path}: is a directory")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise InvalidValue(f"cannot read {path}: {err.strerror or err}") from None


def _text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InvalidValue(f"{path}: line {line}: not UTF-8 ({err.reason})") from None


def _check_one_association_per_account(dump: SlurmDump) -> None:
    """The ledger keeps one association per (user, bank): a user with per-partition
    associations in one account is refused, naming each extra line."""
    seen: dict[tuple[str, str], DumpUser] = {}
    problems = []
    for user in dump.users:
        first = seen.setdefault((user.name, user.account), user)
        if first is not user:
            problems.append(
                f"dump line {user.line}: user {user.name!r} has another association in account"
                f" {user.account!r} (line {first.line}, partition {first.partition or 'none'});"
                " the ledger holds one per (user, account)"
            )
    if problems:
        raise ProblemList("\n".join(problems))


def _check_usage_rows(rows: tuple[SshareRow, ...], dump: SlurmDump) -> None:
    """Every user row names an association of the dump, once, and its cluster if any."""
    known = {(u.account, u.name) for u in dump.users}
    seen: dict[tuple[str, str], int] = {}
    problems = []
    for row in rows:
        if row.user is None:
            continue
        account = row.account.lower()  # sacctmgr lower-cases account names, as parse_dump does
        key = (account, row.user)
        if row.cluster is not None and row.cluster.lower() != dump.cluster:
            problems.append(
                f"sshare line {row.line}: cluster {row.cluster!r} is not the dump's"
                f" ({dump.cluster!r})"
            )
        elif key not in known:
            problems.append(
                f"sshare line {row.line}: user {row.user!r} has no association in account"
                f" {account!r} in the dump"
            )
        elif key in seen:
            problems.append(
                f"sshare line {row.line}: user {row.user!r} in account {account!r} again (line"
                f" {seen[key]}); per-partition rows are one association here"
            )
        else:
            seen[key] = row.line
    if problems:
        raise ProblemList("\n".join(problems))


def _apply(
    site: Site, stamp: Stamp, source: SlurmSource, uids: dict[str, int | None]
) -> _Applied | None:
    """The dump as Site commands, in one Ledger.execute (one atomic save). None when these
    files were imported meanwhile; ProblemList (nothing recorded) when a line is refused."""
    state = site.state
    if not site.may_import(source.sha256, COMMAND, "a ledger with no banks"):
        return None
    dump = source.dump
    applied = _Applied()
    if dump.root_shares == PARENT:
        raise InvalidValue(
            f"{source.file}: the Cluster line's Fairshare=parent: root has no parent to take its"
            " shares from"
        )

    def at_line(line: int) -> Stamp:
        # The command's own source kept whole: on PostgreSQL it holds who --actor acted for.
        where = {**stamp.source, "line": line}
        return Stamp(at=stamp.at, actor=stamp.actor, reason=stamp.reason, source=where)

    conf_stamp = Stamp(
        at=stamp.at,
        actor=stamp.actor,
        reason=stamp.reason,
        source={**stamp.source, "conf": source.conf.path if source.conf else None},
    )
    if source.conf is not None:
        applied.algorithm = slurm_conf_import.switch_algorithm(site, conf_stamp, source.conf)
    elif state.fairshare_algorithm == WEIGHTED_WALK:
        # A Slurm site ranks by Fair Tree unless its slurm.conf says NO_FAIR_TREE (the default
        # since 19.05); recorded first, in the same transaction, so history shows the switch.
        site.edit_config(at_line(0), [(ALGORITHM_KEY, FAIR_TREE)])
        applied.algorithm = [WEIGHTED_WALK, FAIR_TREE]
    for qos in dump.qos:
        fields = {
            "priority": qos.priority,
            "usage_factor": qos.usage_factor,
            "flags": qos.flags,
            "description": qos.description,
        }
        try:
            site.add_qos(at_line(qos.line), qos.name, fields)
            applied.qos += 1
        except LedgerError as err:
            applied.problems.append(f"dump line {qos.line}: QOS {qos.name}: {err}")
    site.add_bank(at_line(0), ROOT_BANK, dump.root_shares, "", None)
    applied.banks += 1
    refused: set[str] = set()  # banks not added: their lines below are not blamed again
    for account in dump.accounts:
        if account.parent in refused:
            refused.add(account.name)
            continue
        try:
            site.add_bank(at_line(account.line), account.name, account.shares, account.parent, None)
            applied.banks += 1
        except LedgerError as err:
            refused.add(account.name)
            applied.problems.append(f"dump line {account.line}: account {account.name}: {err}")
    added: set[str] = set()
    for user in dump.users:
        if user.account in refused:
            continue
        given: dict[str, Any] = {"shares": user.shares}
        if user.qos:
            given["qos"] = ",".join(user.qos)
        if user.default_qos:
            given["default_qos"] = user.default_qos
        try:
            site.add_user(
                at_line(user.line),
                user.name,
                user.account,
                None,
                given,
                os_userid=uids.get(user.name),
            )
            applied.associations += 1
            added.add(user.name)
        except LedgerError as err:
            applied.problems.append(
                f"dump line {user.line}: user {user.name} in account {user.account}: {err}"
            )
    for user in dump.users:
        wanted = user.default_account
        if wanted is None or user.name not in added:
            continue
        if state.default_banks.get(user.name) == wanted:
            continue
        try:
            if site.edit_user(at_line(user.line), user.name, None, {}, default_bank=wanted):
                applied.default_banks += 1
        except LedgerError as err:
            applied.problems.append(
                f"dump line {user.line}: user {user.name}: DefaultAccount {wanted}: {err}"
            )
    if applied.problems:
        raise ProblemList("\n".join(applied.problems))
    if source.conf is not None:
        applied.conf = slurm_conf_import.apply_conf(site, conf_stamp, source.conf)
    at = stamp.at.timestamp()
    applied.balance = [
        [row.user, row.account.lower(), at, row.raw_usage]
        for row in source.usage
        if row.user is not None and row.raw_usage > 0
    ]
    usage_from = {**stamp.source, "usage": source.usage_path}
    site.import_usage_balance(
        Stamp(at=stamp.at, actor=stamp.actor, reason=stamp.reason, source=usage_from),
        applied.balance,
        [],
    )
    site.mark_imported(
        at_line(0),
        source.file,
        source.sha256,
        SCHEMA,
        {
            "qos": applied.qos,
            "banks": applied.banks,
            "associations": applied.associations,
            "default_banks": applied.default_banks,
            "balance_associations": len(applied.balance),
        },
        [],
        ignored(source) + conf_ignored(source),
    )
    return applied


def ignored(source: SlurmSource) -> list[str]:
    """What the files hold that the ledger does not model, one line each."""
    dump = source.dump
    out = []
    fields = list(dump.ignored_fields)
    if any(a.description or a.organization for a in dump.accounts):
        fields[:0] = ["Description", "Organization"]
    if any(u.admin_level for u in dump.users):
        fields.append("AdminLevel")
    if fields:
        out.append(f"fields: {', '.join(dict.fromkeys(fields))}")
    with_partition = [u for u in dump.users if u.partition]
    if with_partition:
        shown = ", ".join(f"{u.name} ({u.account}: {u.partition})" for u in with_partition)
        out.append(f"Partition of per-partition associations, kept per account: {shown}")
    accounts = sum(1 for row in source.usage if row.user is None)
    if accounts:
        out.append(f"sshare account rows: {accounts} (an account's usage is the sum of its users')")
    return out


def conf_ignored(source: SlurmSource) -> list[str]:
    """The slurm.conf's ignored lines, named by its file, for the import's mark."""
    if source.conf is None:
        return []
    lines = slurm_conf_import.ignored_lines(source.conf.conf)
    return [f"{source.conf.file} {line}" for line in lines]


def _report(source: SlurmSource, applied: _Applied, seconds: float) -> dict[str, Any]:
    return {
        "file": source.dump_path,
        "sha256": source.sha256,
        "cluster": source.dump.cluster,
        "seconds": round(seconds, 3),
        "qos": applied.qos,
        "banks": applied.banks,
        "associations": applied.associations,
        "default_banks": applied.default_banks,
        "fairshare_algorithm": applied.algorithm,
        "balance": {
            "file": source.usage_path,
            "associations": len(applied.balance),
            "raw_usage": sum(entry[3] for entry in applied.balance),
        },
        "ignored": ignored(source),
        "conf": applied.conf,
    }
