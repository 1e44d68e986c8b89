"""`sacctmgr dump <cluster>` flat files: the account tree, user associations and shares.

The layout (`sacctmgr_dump_cluster`, read back by `load_sacctmgr_cfg_file`):

    # comment
    QOS - 'normal':Description='Normal QOS default'
    Cluster - 'tux':Fairshare=1:QOS='normal'
    Parent - 'root'
    User - 'root':DefaultAccount='root':AdminLevel='Administrator':Fairshare=1
    Account - 'science':Description='science':Organization='science':Fairshare=50
    Parent - 'science'
    User - 'brian':DefaultAccount='science':Fairshare=parent

Read as `sacctmgr load` reads it:

* `#` starts a comment unless escaped (`\\#`); a line ending in an odd number of `\\` continues
  on the next; then `\\x` becomes `x`. Line numbers in errors are those of a line's first
  physical line.
* A line is `<Object> - <name>[:Key=value]...`. Objects: `QOS`, `Cluster` (or `Machine`),
  `Parent`, `Account` (or `Project`), `User`, case-insensitive. Fields are separated by `:`
  except inside quotes and inside a typed TRES (`gres/gpu:tesla=4`). Quotes around a value
  are removed. Keys are case-insensitive and may be abbreviated as sacctmgr allows
  (`Fairshare`, `Fa`, `F`, `Shares`...).
* QOS lines must come before the one `Cluster` line; `Parent`, `Account`, `User` after it.
  `Parent - 'x'` names an account defined earlier (or `root`); the `Account` and `User` lines
  that follow hang below it (below root if no `Parent` line came yet).
* Read: the cluster name; per QOS its name, `Priority`, `UsageFactor`, `Flags` and
  `Description`; per account its name, parent, `Fairshare`, Description and Organization; per
  user association its user, account, `Partition`, `Fairshare`, `DefaultAccount`,
  `AdminLevel`; the `QOS` and `DefaultQOS` of the Cluster line, accounts and users. A user
  without its own takes its account's, else the nearest account's above, else the Cluster
  line's (`DumpUser.qos`): the dump leaves inherited values out, as slurmdbd inherits them.
  `Fairshare=parent` (any case) and `Fairshare=2147483647` are `PARENT`; a negative
  Fairshare clears it (sacctmgr's `get_uint`), so it is the default, 1, which is also what a
  missing Fairshare gives. Account names, as sacctmgr load does, are
  lower-cased; user names are kept (slurmdbd's PreserveCaseUser may keep their case).
* Every other known field (the limits, a QOS line's too, WCKeys, Coordinator, Comment, ...) is
  accepted and ignored; its key is listed in `SlurmDump.ignored_fields`. An unknown key is an
  error, as in sacctmgr.

Errors, one line per offending line: a malformed line, an unknown object or key, a bad
Fairshare, a Parent that is not defined before, an account defined twice, a user association
repeated, QOS after Cluster, a second Cluster, a tree line before the Cluster line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ledger.errors import InvalidValue
from ledger.slurm._lines import LineError, LineErrors
from ledger.slurm_shares import PARENT, ROOT, SlurmAccount, SlurmUser

T = TypeVar("T")

DEFAULT_SHARES = 1
"""The shares of an association without `Fairshare=` (slurmdbd's default)."""

# (full key, shortest abbreviation sacctmgr accepts), in the order sacctmgr tries them.
_MODELLED_KEYS: tuple[tuple[str, int], ...] = (
    ("AdminLevel", 2),
    ("Coordinator", 2),
    ("Classification", 2),
    ("DefaultAccount", 8),
    ("DefaultWCKey", 8),
    ("Description", 3),
    ("Organization", 1),
    ("Partition", 1),
    ("WCKeys", 2),
    ("Comment", 2),
    ("DefaultQOS", 8),
    ("FairShare", 1),
    ("Shares", 1),
)
_QOS_KEYS = frozenset({"QOS", "QosLevel", "DefaultQOS"})  # an association's QOS list and default
# The keys read, per object; the others present are listed as ignored.
_READ_KEYS: dict[str, frozenset[str]] = {
    "QOS": frozenset({"Description", "Priority", "UsageFactor", "Flags"}),
    "Cluster": frozenset({"FairShare", *_QOS_KEYS}),
    "Parent": frozenset(),
    "Account": frozenset({"Description", "Organization", "FairShare", *_QOS_KEYS}),
    "User": frozenset({"AdminLevel", "DefaultAccount", "Partition", "FairShare", *_QOS_KEYS}),
}
IGNORED_KEYS: tuple[str, ...] = (
    "GrpCPUMins",
    "GrpCPURunMins",
    "GrpCpus",
    "GrpJobs",
    "GrpJobsAccrue",
    "GrpMemory",
    "GrpNodes",
    "GrpSubmitJobs",
    "GrpTRES",
    "GrpTRESMins",
    "GrpTRESRunMins",
    "GrpWall",
    "MaxCPUMinsPerJob",
    "MaxCPURunMins",
    "MaxCpusPerJob",
    "MaxJobs",
    "MaxJobsAccrue",
    "MaxNodesPerJob",
    "MaxSubmitJobs",
    "MaxTRESMinsPerJob",
    "MaxTRESRunMins",
    "MaxTRESPerJob",
    "MaxTRESPerNode",
    "MaxWallDurationPerJob",
    "MinPrioThresh",
    "Priority",
    "QOS",
    "QosLevel",
    "Flags",
    "GraceTime",
    "MaxTRESPerUser",
    "MaxJobsPerUser",
    "MaxSubmitJobsPerUser",
    "MaxTRESPerAccount",
    "MaxJobsPerAccount",
    "MaxSubmitJobsPerAccount",
    "MinTRESPerJob",
    "Preempt",
    "PreemptMode",
    "PreemptExemptTime",
    "UsageFactor",
    "UsageThreshold",
    "LimitFactor",
)
"""Keys accepted and ignored (limits, QOS settings, ...), besides Coordinator, Classification,
DefaultWCKey, WCKeys and Comment; a QOS line's Priority, UsageFactor and Flags and an
association's QOS (or QosLevel) are read (`_READ_KEYS`)."""

_INTEGER = re.compile(r"[+-]?\d+")
_OBJECTS = {
    "qos": "QOS",
    "cluster": "Cluster",
    "machine": "Cluster",
    "parent": "Parent",
    "account": "Account",
    "project": "Account",
    "user": "User",
}


@dataclass(frozen=True)
class DumpQos:
    """A QOS line: its name, Priority (absent: 0), UsageFactor (absent: 1), Flags as given
    (the ledger checks the names) and Description."""

    name: str
    priority: int = 0
    usage_factor: float = 1.0
    flags: str = ""
    description: str | None = None
    line: int = 0


@dataclass(frozen=True)
class DumpAccount:
    """An account line: its name, its parent (`root` at the top), raw shares (`PARENT` for
    Fairshare=parent), and the line it came from."""

    name: str
    parent: str
    shares: int
    description: str | None = None
    organization: str | None = None
    line: int = 0
    qos: tuple[str, ...] | None = None  # its own QOS= (None: inherited)
    default_qos: str | None = None


@dataclass(frozen=True)
class DumpUser:
    """A user association line: user, account (`root` for a user under root), partition
    (None for the account-wide association), raw shares, the user's defaults."""

    name: str
    account: str
    shares: int
    partition: str | None = None
    default_account: str | None = None
    admin_level: str | None = None
    line: int = 0
    # The association's QOS list and default: its own, else inherited (see the module doc).
    qos: tuple[str, ...] = ()
    default_qos: str | None = None


@dataclass(frozen=True)
class SlurmDump:
    """A parsed dump: the cluster, its QOS, accounts in file order (parents first),
    user associations in file order, root's shares (from the Cluster line), and the keys that
    were present but are not modelled."""

    cluster: str
    qos: tuple[DumpQos, ...] = ()
    accounts: tuple[DumpAccount, ...] = ()
    users: tuple[DumpUser, ...] = ()
    root_shares: int = DEFAULT_SHARES
    ignored_fields: tuple[str, ...] = ()

    def slurm_accounts(self) -> list[SlurmAccount]:
        """The accounts as `ledger.slurm_shares` takes them."""
        return [SlurmAccount(a.name, a.parent, a.shares) for a in self.accounts]

    def slurm_users(self, usage: Mapping[tuple[str, str], float] | None = None) -> list[SlurmUser]:
        """The user associations as `ledger.slurm_shares` takes them, with raw usage from
        `usage[(account, user)]` (0 if absent). Per-partition associations are not modelled
        there: a (user, account) with more than one is refused."""
        usage = usage or {}
        seen: dict[tuple[str, str], DumpUser] = {}
        out = []
        for u in self.users:
            if (u.name, u.account) in seen:
                raise InvalidValue(
                    f"dump line {u.line}: user {u.name!r} has several associations in account"
                    f" {u.account!r} (per partition, line {seen[(u.name, u.account)].line});"
                    " the fair-share tree holds one per (user, account)"
                )
            seen[(u.name, u.account)] = u
            out.append(SlurmUser(u.name, u.account, u.shares, usage.get((u.account, u.name), 0.0)))
        return out


def parse_dump(text: str) -> SlurmDump:
    """Parse a `sacctmgr dump` file's text (see the module docstring)."""
    errors = LineErrors("dump")
    cluster: str | None = None
    root_shares = DEFAULT_SHARES
    qos: dict[str, DumpQos] = {}
    # The Cluster line's QOS list and default, which every association without its own takes.
    cluster_qos: tuple[str, ...] = ()
    cluster_default_qos: str | None = None
    accounts: dict[str, DumpAccount] = {}
    users: dict[tuple[str, str, str | None], DumpUser] = {}
    ignored: dict[str, None] = {}
    parent: str | None = None
    for number, line in _logical_lines(text):
        try:
            obj, name, fields = _split_line(line)
            for field_key in fields:
                if field_key not in _READ_KEYS[obj]:
                    ignored.setdefault(field_key)
            if obj == "QOS":
                if cluster is not None:
                    raise LineError(f"QOS {name!r} comes after the Cluster line")
                if name in qos:
                    raise LineError(f"QOS {name!r} appears twice")
                qos[name] = _qos_line(name, fields, number)
            elif obj == "Cluster":
                if cluster is not None:
                    raise LineError(f"a second Cluster {name!r} (one cluster per file)")
                cluster = name.lower()
                root_shares = _shares(fields)
                cluster_qos = _qos_list(fields) or ()
                cluster_default_qos = fields.get("DefaultQOS")
            elif cluster is None:
                raise LineError(f"{obj} {name!r} before the 'Cluster - <name>' line")
            elif obj == "Parent":
                name = name.lower()
                if name != ROOT and name not in accounts:
                    raise LineError(
                        f"Parent {name!r} is not defined: add it as an Account before its children"
                    )
                parent = name
            elif obj == "Account":
                name = name.lower()
                if name == ROOT:
                    raise LineError("Account 'root' is the cluster association, not an account")
                if name in accounts:
                    raise LineError(
                        f"Account {name!r} is defined twice (also line {accounts[name].line})"
                    )
                accounts[name] = DumpAccount(
                    name=name,
                    parent=parent or ROOT,
                    shares=_shares(fields),
                    description=fields.get("Description"),
                    organization=fields.get("Organization"),
                    line=number,
                    qos=_qos_list(fields),
                    default_qos=fields.get("DefaultQOS"),
                )
            else:  # User
                account = parent or ROOT
                partition = fields.get("Partition")
                user_key = (name, account, partition)
                if user_key in users:
                    raise LineError(
                        f"User {name!r} in account {account!r}"
                        + (f" partition {partition!r}" if partition else "")
                        + f" appears twice (also line {users[user_key].line})"
                    )
                users[user_key] = DumpUser(
                    name=name,
                    account=account,
                    shares=_shares(fields),
                    partition=partition,
                    default_account=_lower(fields.get("DefaultAccount")),
                    admin_level=fields.get("AdminLevel"),
                    line=number,
                    qos=_inherited(
                        _qos_list(fields), account, accounts, lambda a: a.qos, cluster_qos
                    ),
                    default_qos=_inherited(
                        fields.get("DefaultQOS"),
                        account,
                        accounts,
                        lambda a: a.default_qos,
                        cluster_default_qos,
                    ),
                )
        except LineError as exc:
            errors.add(number, str(exc))
    if cluster is None and not errors.lines:
        raise InvalidValue("dump: no 'Cluster - <name>' line")
    errors.raise_if_any()
    assert cluster is not None
    return SlurmDump(
        cluster=cluster,
        qos=tuple(qos.values()),
        accounts=tuple(accounts.values()),
        users=tuple(users.values()),
        root_shares=root_shares,
        ignored_fields=tuple(ignored),
    )


def _qos_line(name: str, fields: Mapping[str, str], line: int) -> DumpQos:
    priority = fields.get("Priority", "0")
    if not _INTEGER.fullmatch(priority):
        raise LineError(f"QOS {name!r}: Priority {priority!r} is not a whole number")
    factor = fields.get("UsageFactor", "1")
    try:
        usage_factor = float(factor)
    except ValueError:
        raise LineError(f"QOS {name!r}: UsageFactor {factor!r} is not a number") from None
    return DumpQos(
        name=name,
        priority=int(priority),
        usage_factor=usage_factor,
        flags=fields.get("Flags", ""),
        description=fields.get("Description"),
        line=line,
    )


def _qos_list(fields: Mapping[str, str]) -> tuple[str, ...] | None:
    """An association's own QOS= (or QosLevel=) list; None when the line has none."""
    text = fields.get("QOS", fields.get("QosLevel"))
    if text is None:
        return None
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _inherited(
    own: T | None,
    account: str,
    accounts: Mapping[str, DumpAccount],
    read: Callable[[DumpAccount], T | None],
    cluster_value: T,
) -> T:
    """A user's own value, else the nearest account's up the tree, else the Cluster line's: how
    slurmdbd fills a QOS list or default QOS that a dump leaves out (it writes only what is set
    on the line itself)."""
    if own is not None:
        return own
    found = accounts.get(account)
    while found is not None:
        value = read(found)
        if value is not None:
            return value
        found = accounts.get(found.parent)
    return cluster_value


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with comments removed, continuations joined and escapes resolved, numbered by
    their first physical line; blank ones dropped."""
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = _strip_comment(raw)
        stripped = line.rstrip()
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            pending += stripped[:-1]
            continue
        whole = _unescape(pending + line)
        pending = ""
        if whole.strip():
            out.append((start, whole.strip()))
    if pending and _unescape(pending).strip():
        out.append((start, _unescape(pending).strip()))
    return out


def _strip_comment(line: str) -> str:
    backslashes = 0
    for i, char in enumerate(line):
        if char == "#" and backslashes % 2 == 0:
            return line[:i]
        backslashes = backslashes + 1 if char == "\\" else 0
    return line


def _unescape(line: str) -> str:
    out = []
    i = 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            i += 1
        out.append(line[i])
        i += 1
    return "".join(out)


def _split_line(line: str) -> tuple[str, str, dict[str, str]]:
    """(object, name, {canonical key: value}) of one logical line."""
    head, dash, rest = line.partition("-")
    obj = _OBJECTS.get(head.strip().lower())
    if not dash or obj is None:
        raise LineError(
            f"{line[:60]!r} is not '<Object> - <name>' with Object one of"
            " QOS, Cluster, Parent, Account, User"
        )
    parts = _split_fields(rest)
    if not parts or not parts[0].strip():
        raise LineError(f"nothing after '{head.strip()} -'")
    name = _unquote(parts[0])
    if "=" in parts[0].split("'")[0].split('"')[0] or not name:
        raise LineError(f"{obj} line must start with a name, got {parts[0].strip()!r}")
    fields: dict[str, str] = {}
    for part in parts[1:]:
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise LineError(f"field {part.strip()!r} has no '=' (Key=value)")
        canonical = _canonical_key(key.strip())
        if canonical is None:
            raise LineError(f"unknown field {key.strip()!r}")
        value = _unquote(value)
        if value:
            fields[canonical] = value
    return obj, name, fields


def _split_fields(text: str) -> list[str]:
    """Split on ':' outside quotes, except a ':' inside a typed TRES (`gres/gpu:tesla=4`)."""
    parts: list[str] = []
    quote: str | None = None
    start = 0
    for i, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == ":" and not _typed_tres_colon(text, start, i):
            parts.append(text[start:i])
            start = i + 1
    if quote:
        raise LineError(f"unterminated {quote} quote in {text.strip()!r}")
    parts.append(text[start:])
    return parts


def _typed_tres_colon(text: str, start: int, colon: int) -> bool:
    """sacctmgr's `_is_colon_typed_tres`: a '/' before any of = , : ' \" going backwards."""
    for j in range(colon - 1, start - 1, -1):
        if text[j] in "=,:'\"":
            return False
        if text[j] == "/":
            return True
    return False


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        return text[1:-1].strip()
    return text


def _canonical_key(key: str) -> str | None:
    lower = key.lower()
    if not lower:
        return None
    for full, shortest in _MODELLED_KEYS:
        if len(lower) >= shortest and full.lower().startswith(lower):
            return "FairShare" if full == "Shares" else full
    for full in IGNORED_KEYS:
        if lower == full.lower():
            return full
    for full in IGNORED_KEYS:  # an abbreviation of an ignored key: only if unambiguous
        if len(lower) >= 4 and full.lower().startswith(lower):
            return full
    return None


def _shares(fields: Mapping[str, str]) -> int:
    text = fields.get("FairShare")
    if text is None:
        return DEFAULT_SHARES
    if text.lower().startswith("parent"):
        return PARENT
    if not _INTEGER.fullmatch(text):
        raise LineError(f"Fairshare {text!r} is not a whole number or 'parent'")
    value = int(text)
    if value < 0:
        return DEFAULT_SHARES  # sacctmgr's get_uint: negative clears the value
    if value > PARENT:
        raise LineError(f"Fairshare {text!r} is above {PARENT} ({PARENT} means parent)")
    return value


def _lower(text: str | None) -> str | None:
    return None if text is None else text.lower()
