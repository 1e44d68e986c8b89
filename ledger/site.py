"""The Site aggregate: the bank tree, associations, queues, projects, factor weights and config.

One aggregate for the whole administrative state, because its rules span objects (a user may
only join a leaf bank, a bank move must not make a cycle, a default bank must be one of the
user's active associations). One stream gives every command optimistic concurrency over all of
them: two writers that race on any part of the site conflict on the version and the loser
retries against fresh state, so no update is ever lost and no rule is checked against stale
data. Command methods validate, then trigger events; the reducers (ledger.reducers) apply them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from eventsourcing.domain import Aggregate

from ledger import bounds
from ledger import events as ev
from ledger import import_events as iev
from ledger.billing import BillingMode, parse_billing_weights
from ledger.bounds import check_float, check_int, check_text
from ledger.clock import zone_named
from ledger.continuous_usage import ResetPeriod
from ledger.durations import format_seconds, parse_duration
from ledger.errors import AlreadyExists, InvalidValue, NotFound
from ledger.fairshare_in_force import NEW_ASSOCIATION_FAIRSHARE
from ledger.limits import ASSOCIATION_LIMIT_FIELDS
from ledger.reducers import fold
from ledger.site_config import (
    ALGORITHM_KEY,
    ALGORITHMS,
    ASSOCIATION_DEFAULTS,
    BILLING_WEIGHTS,
    CLUSTER_CPUS_KEY,
    CLUSTER_NODES_KEY,
    CONFIG_DEFAULTS,
    CONFIG_KEYS,
    DAMPENING_KEY,
    EDITABLE_CONFIG_KEYS,
    FACTOR_DEFAULTS,
    FAVOR_SMALL_KEY,
    HALF_LIFE_KEY,
    MAX_AGE_KEY,
    PARTITION_DEFAULTS,
    PERIODS,
    PRIORITY_FLAGS_KEY,
    QOS_DEFAULTS,
    QOS_FLAGS,
    QUEUE_DEFAULTS,
    RESET_PERIOD_KEY,
    SLURM_FACTOR_DEFAULTS,
    TIMEZONE_KEY,
    TRES_WEIGHTS_KEY,
    USAGE_MODEL_KEY,
    USAGE_MODELS,
    WEIGHTED_WALK,
    csv_items,
    default_usage_model,
    periods_half_life,
    reset_period_seconds,
    usage_model_of,
)
from ledger.slurm_parent import PARENT
from ledger.state import Association, SiteState

SITE_ID = uuid5(NAMESPACE_URL, "fairledger:site")
RESET_NAMES = tuple(ResetPeriod)  # Slurm's PriorityUsageResetPeriod names (continuous model)
# Slurm's PriorityFlags that a ledger records (research slurm.md §3.3, §4.3): the billing ones
# (BillingMode's, SUM is no flag) and the multifactor ones. NO_FAIR_TREE and DEPTH_OBLIVIOUS are
# the fairshare_algorithm key's to say; CALCULATE_RUNNING only changes which jobs slurmctld
# recomputes, kept so that a site's slurm.conf reads back whole.
PRIORITY_FLAGS = (
    *tuple(BillingMode)[1:],
    "ACCRUE_ALWAYS",
    "SMALL_RELATIVE_TO_TIME",
    "CALCULATE_RUNNING",
    "INCR_ONLY",
    "NO_NORMAL_ASSOC",
    "NO_NORMAL_PART",
    "NO_NORMAL_QOS",
    "NO_NORMAL_TRES",
    "NO_NORMAL_ALL",
)
ALGORITHM_FLAGS = ("FAIR_TREE", "NO_FAIR_TREE", "DEPTH_OBLIVIOUS")
DAMPENING_MAX = 0xFFFF  # Slurm's FairShareDampeningFactor is a uint16
UNLIMITED_WORDS = ("-1", "unlimited")


# The source key that keeps who a PostgreSQL session's role acted for (ledger.store.roles).
ON_BEHALF_OF = "on_behalf_of"


@dataclass(frozen=True)
class Stamp:
    """When, by whom, why and from where a change is made: the metadata of its events."""

    at: datetime
    actor: str
    reason: str = ""
    source: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Who and why are printed by `history`: one printable line each (ledger.bounds).
        check_text("actor", self.actor)
        check_text("reason", self.reason)
        # On PostgreSQL a given --actor is kept as who the session's role acted for.
        if isinstance(self.source.get(ON_BEHALF_OF), str):
            check_text("actor", self.source[ON_BEHALF_OF])

    def kwargs(self) -> dict[str, Any]:
        return {
            "timestamp": self.at,
            "actor": self.actor,
            "reason": self.reason,
            "source": dict(self.source),
        }


class Site(Aggregate):
    def __init__(self) -> None:
        self.state = SiteState()

    def fold(self, event: Any) -> None:
        fold(self.state, event)

    # --- creation --------------------------------------------------------------------------------
    @classmethod
    def create(cls, stamp: Stamp, epoch: float, config: dict[str, str]) -> Site:
        site = cls._create(
            ev.LedgerCreated,
            id=SITE_ID,
            epoch=epoch,
            config=config,
            factors=dict(FACTOR_DEFAULTS),
            **stamp.kwargs(),
        )
        # flux-accounting seeds the catch-all project at create-db; so do we, as an event.
        site.trigger_event(ev.ProjectAdded, project="*", project_id=1, **stamp.kwargs())
        return site

    # --- banks -----------------------------------------------------------------------------------
    def add_bank(
        self,
        stamp: Stamp,
        bank: str,
        shares: int,
        parent_bank: str,
        priority: float | None,
        bank_id: int | None = None,
        ignore_older_than: float | None = None,
    ) -> None:
        """`bank_id` keeps an imported bank's id (default: the next free one)."""
        s = self.state
        _check_name("bank", bank)
        if s.fairshare_algorithm != WEIGHTED_WALK:
            _check_slurm_name("bank", bank, is_root=not parent_bank)
            _check_root_shares(bank, shares, is_root=not parent_bank)
        _check_shares(shares)
        if priority is not None:
            priority = _check_bank_priority(priority)
        if ignore_older_than is not None:
            ignore_older_than = _check_cutoff(ignore_older_than)
        existing = s.banks.get(bank)
        if existing is not None and existing.active:
            raise AlreadyExists(f"bank {bank} already exists")
        if parent_bank:
            self._check_can_hold_banks(parent_bank)
        elif existing is None or existing.parent_bank:
            root = s.root_bank()
            if root is not None:
                raise AlreadyExists(f"bank_table already has a root bank: {root.bank}")
        if existing is not None:
            # Reactivation takes the arguments given (flux-accounting ignores them: a bug).
            wanted: dict[str, Any] = {"shares": shares, "parent_bank": parent_bank}
            if priority is not None:
                wanted["priority"] = priority
            if ignore_older_than is not None:
                wanted["ignore_older_than"] = ignore_older_than
            if parent_bank and parent_bank != existing.parent_bank:
                self._check_no_cycle(bank, parent_bank)
            changes = _diff(existing, wanted)
            self.trigger_event(ev.BankReactivated, bank=bank, changes=changes, **stamp.kwargs())
            return
        if bank_id is not None:
            _check_id("bank_id", bank_id, {b.bank_id: b.bank for b in s.banks.values()})
        self.trigger_event(
            ev.BankAdded,
            bank=bank,
            parent_bank=parent_bank,
            shares=shares,
            priority=float(priority or 0.0),
            bank_id=s.next_bank_id if bank_id is None else bank_id,
            **stamp.kwargs(),
        )
        if ignore_older_than:
            # BankAdded has no cutoff field (its stored shape is fixed): the cutoff is the
            # bank's first edit, in the same transaction.
            self.trigger_event(
                ev.BankEdited,
                bank=bank,
                changes={"ignore_older_than": [0.0, ignore_older_than]},
                **stamp.kwargs(),
            )

    def edit_bank(
        self,
        stamp: Stamp,
        bank: str,
        shares: int | None = None,
        parent_bank: str | None = None,
        priority: float | None = None,
        ignore_older_than: float | None = None,
    ) -> bool:
        current = self._bank(bank)
        wanted: dict[str, Any] = {}
        if ignore_older_than is not None:
            wanted["ignore_older_than"] = _check_cutoff(ignore_older_than)
        if shares is not None:
            _check_shares(shares)
            if self.state.fairshare_algorithm != WEIGHTED_WALK:
                root = not (current.parent_bank if parent_bank is None else parent_bank)
                _check_root_shares(bank, shares, is_root=root)
            wanted["shares"] = shares
        if priority is not None:
            wanted["priority"] = _check_bank_priority(priority)
        if parent_bank is not None and parent_bank != current.parent_bank:
            if not current.parent_bank:
                raise InvalidValue(f"bank {bank} is the root bank and cannot be moved")
            self._check_can_hold_banks(parent_bank)
            self._check_no_cycle(bank, parent_bank)
            wanted["parent_bank"] = parent_bank
        changes = _diff(current, wanted)
        if changes:
            self.trigger_event(ev.BankEdited, bank=bank, changes=changes, **stamp.kwargs())
        return bool(changes)

    def delete_bank(self, stamp: Stamp, bank: str, force: bool) -> None:
        s = self.state
        current = self._bank(bank)
        if not force and not current.active:
            raise InvalidValue(f"bank {bank} is already inactive (use --force to remove it)")
        banks = [b.bank for b in s.subtree(bank)]
        in_subtree = set(banks)
        assocs = [a for a in s.all_associations() if a.bank in in_subtree]
        if not force:
            assocs = [a for a in assocs if a.active]
        leaving = {(a.username, a.bank) for a in assocs}
        defaults = {}
        for username in sorted({a.username for a in assocs}):
            change = self._default_after_leaving(username, leaving)
            if change:
                defaults[username] = change
        pairs = [[a.username, a.bank] for a in sorted(assocs, key=lambda a: (a.bank, a.username))]
        event_class = ev.BankRemoved if force else ev.BankDeactivated
        self.trigger_event(
            event_class,
            bank=bank,
            banks=banks,
            associations=pairs,
            default_banks=defaults,
            **stamp.kwargs(),
        )

    def _bank(self, bank: str) -> Any:
        found = self.state.banks.get(bank)
        if found is None:
            raise NotFound(f"bank {bank} not found in bank_table")
        return found

    def _check_can_hold_banks(self, parent_bank: str) -> None:
        parent = self.state.banks.get(parent_bank)
        if parent is None:
            raise NotFound(f"parent bank {parent_bank} not found in bank_table")
        if not parent.active:
            raise InvalidValue(f"parent bank {parent_bank} is inactive")

    def _check_no_cycle(self, bank: str, new_parent: str) -> None:
        if new_parent == bank or bank in self.state.ancestors(new_parent):
            raise InvalidValue(
                f"moving bank {bank} under {new_parent} would make a cycle in the bank tree"
            )

    # --- associations ----------------------------------------------------------------------------
    def add_user(
        self,
        stamp: Stamp,
        username: str,
        bank: str,
        userid: int | None,
        given: dict[str, Any],
        os_userid: int | None = None,
        active: bool = True,
    ) -> None:
        """`userid` if given, else the user's existing one, else the OS's (`os_userid`), else
        65534 (flux-accounting's column default). `active=False` brings over an association
        that was inactive where it comes from (an import), in one event."""
        s = self.state
        _check_name("username", username)
        if s.fairshare_algorithm != WEIGHTED_WALK:
            _check_slurm_name("user", username)
        for key in ("creation_time", "mod_time"):  # an import's times, kept in the source
            if key in stamp.source:
                bounds.check_time(key, stamp.source[key])
        target = s.banks.get(bank)
        if target is None:
            raise NotFound(f"Bank {bank} does not exist in bank_table")
        if not target.active:
            raise InvalidValue(f"bank {bank} is inactive")
        existing = s.association(username, bank)
        if existing is not None and (existing.active or not active):
            raise AlreadyExists(
                f"association {username},{bank} already active in association_table"
            )
        fields = self._association_fields(given, base=existing)
        others = s.associations.get(username, {})
        if userid is None:
            userid = next(iter(others.values())).userid if others else os_userid
        if userid is None:
            userid = 65534
        _check_non_negative("userid", userid, bounds.USERID_MAX)
        default = None if s.default_banks.get(username) else [None, bank]
        if existing is not None:
            wanted = dict(fields, userid=userid)
            changes = _diff(
                existing,
                {
                    k: v
                    for k, v in wanted.items()
                    if k in given or k == "userid" and userid != existing.userid
                },
            )
            if default is None and not self._active_banks_of(username):
                default = [s.default_banks.get(username), bank]
            self.trigger_event(
                ev.AssociationReactivated,
                username=username,
                bank=bank,
                changes=changes,
                default_bank=default,
                **stamp.kwargs(),
            )
            return
        if not active:
            fields["active"] = False
        self.trigger_event(
            ev.AssociationAdded,
            username=username,
            bank=bank,
            userid=userid,
            fields=fields,
            default_bank=default,
            **stamp.kwargs(),
        )

    def edit_user(
        self,
        stamp: Stamp,
        username: str,
        bank: str | None,
        given: dict[str, Any],
        add_queues: list[str] | None = None,
        delete_queues: list[str] | None = None,
        default_bank: str | None = None,
    ) -> int:
        """Returns the number of events recorded (0 when nothing changes)."""
        s = self.state
        rows = self._user_rows(username, bank)
        if given.get("queues") is not None and (add_queues or delete_queues):
            raise InvalidValue("--queues cannot be combined with --add-queue/--delete-queue")
        for queue in (add_queues or []) + (delete_queues or []):
            self._check_queue(queue)
        recorded = 0
        for assoc in rows:
            fields = self._association_fields(given, base=assoc, partial=True)
            if add_queues or delete_queues:
                queues = [q for q in csv_items(assoc.queues) if q not in (delete_queues or [])]
                queues += [q for q in add_queues or [] if q not in queues]
                fields["queues"] = ",".join(queues)
            if given.get("userid") is not None:
                _check_non_negative("userid", int(given["userid"]), bounds.USERID_MAX)
                fields["userid"] = int(given["userid"])
            changes = _diff(assoc, fields)
            if changes:
                self.trigger_event(
                    ev.AssociationEdited,
                    username=username,
                    bank=assoc.bank,
                    changes=changes,
                    **stamp.kwargs(),
                )
                recorded += 1
        if default_bank is not None:
            if default_bank in UNLIMITED_WORDS:
                raise InvalidValue("default bank cannot be reset with -1")
            if default_bank not in self._active_banks_of(username):
                raise InvalidValue(
                    f"user {username} has no active association in bank {default_bank}"
                )
            old = s.default_banks.get(username)
            if old != default_bank:
                self.trigger_event(
                    ev.DefaultBankChanged,
                    username=username,
                    old=old,
                    new=default_bank,
                    **stamp.kwargs(),
                )
                recorded += 1
        return recorded

    def delete_user(self, stamp: Stamp, username: str, bank: str, force: bool) -> None:
        (assoc,) = self._user_rows(username, bank)
        if not force and not assoc.active:
            raise InvalidValue(
                f"user {username} in bank {bank} is already inactive (use --force to remove it)"
            )
        default = self._default_after_leaving(username, {(username, bank)})
        event_class = ev.AssociationRemoved if force else ev.AssociationDeactivated
        self.trigger_event(
            event_class, username=username, bank=bank, default_bank=default, **stamp.kwargs()
        )

    def set_fairshare(
        self, stamp: Stamp, username: str, bank: str, value: float | str, shown: float | None
    ) -> bool:
        """--fairshare: the association's fair-share set by hand, in force until a walk ranks
        it (ledger.fairshare_in_force); -1 or `unlimited` resets it to a new association's
        value. `shown`: the value its row shows now (the event's old value)."""
        self._user_rows(username, bank)
        if str(value).strip().lower() in UNLIMITED_WORDS:
            new = NEW_ASSOCIATION_FAIRSHARE
        else:
            new = _check_fairshare(value)
        if shown == new:
            return False
        self.trigger_event(
            ev.FairshareSet, username=username, bank=bank, old=shown, new=new, **stamp.kwargs()
        )
        return True

    def edit_all_users(
        self, stamp: Stamp, given: dict[str, Any], default_bank: str | None = None
    ) -> int:
        """edit-user for every user's every association (flux-accounting's edit-all-users, an
        UPDATE without a WHERE). A --default-bank must be one every user has an active
        association in: flux-accounting sets it blindly, leaving defaults that name no bank
        of the user. Returns the number of events recorded."""
        users = sorted(self.state.associations)
        if default_bank is not None and default_bank not in UNLIMITED_WORDS:
            for username in users:
                if default_bank not in self._active_banks_of(username):
                    raise InvalidValue(
                        f"default bank {default_bank} cannot be set for every user: user "
                        f"{username} has no active association in bank {default_bank}"
                    )
        return sum(
            self.edit_user(stamp, username, None, given, default_bank=default_bank)
            for username in users
        )

    def sync_userids(self, stamp: Stamp) -> list[tuple[str, str, int, int]]:
        """Give every association of a user one userid: the one its most recently modified
        association holds (edit-user -B --userid changes one association). Usage follows a
        job's username, so nothing else needs syncing. Returns (username, bank, old, new)."""
        changed = []
        for username in sorted(self.state.associations):
            rows = list(self.state.associations[username].values())
            if len({a.userid for a in rows}) < 2:
                continue
            latest = max(rows, key=lambda a: (a.mod_time, a.creation_time, a.bank))
            for assoc in sorted(rows, key=lambda a: a.bank):
                if assoc.userid != latest.userid:
                    changed.append((username, assoc.bank, assoc.userid, latest.userid))
        for username, bank, old, new in changed:
            self.trigger_event(
                ev.AssociationEdited,
                username=username,
                bank=bank,
                changes={"userid": [old, new]},
                **stamp.kwargs(),
            )
        return changed

    def _user_rows(self, username: str, bank: str | None) -> list[Association]:
        banks = self.state.associations.get(username)
        if not banks:
            raise NotFound(f"user {username} not found in association_table")
        if bank is None:
            return [banks[b] for b in sorted(banks)]
        if bank not in banks:
            raise NotFound(f"user {username} not found in bank {bank}")
        return [banks[bank]]

    def _active_banks_of(self, username: str) -> list[str]:
        rows = self.state.associations.get(username, {}).values()
        return [a.bank for a in sorted(rows, key=lambda a: (a.creation_time, a.bank)) if a.active]

    def _default_after_leaving(
        self, username: str, leaving: set[tuple[str, str]]
    ) -> list[str | None] | None:
        """The user's default bank moves to their earliest remaining active association."""
        current = self.state.default_banks.get(username)
        if (username, current) not in leaving:
            return None
        remaining = [b for b in self._active_banks_of(username) if (username, b) not in leaving]
        if not remaining:
            return None
        return [current, remaining[0]]

    def _association_fields(
        self, given: dict[str, Any], base: Association | None, partial: bool = False
    ) -> dict[str, Any]:
        """Validated association fields: defaults filled in unless `partial` (edits)."""
        out: dict[str, Any] = {} if partial else dict(ASSOCIATION_DEFAULTS)
        if base is not None and not partial:
            out.update({k: getattr(base, k) for k in ASSOCIATION_DEFAULTS})
        for name, value in given.items():
            if value is None or name == "userid":
                continue
            if name in ("qos", "default_qos"):
                out[name] = self._qos_field(name, str(value))
                continue
            if str(value) in UNLIMITED_WORDS and name != "default_project":
                out[name] = ASSOCIATION_DEFAULTS[name]
                continue
            if name == "shares":
                _check_shares(int(value))
                out[name] = int(value)
            elif name in ASSOCIATION_LIMIT_FIELDS:
                _check_non_negative(name, int(value))
                out[name] = int(value)
            elif name == "queues":
                queues = csv_items(str(value))
                for queue in queues:
                    self._check_queue(queue)
                out[name] = ",".join(queues)
            elif name == "projects":
                projects = csv_items(str(value))
                for project in projects:
                    self._check_project(project)
                if "*" not in projects:
                    projects.append("*")  # every association may use the catch-all project
                out[name] = ",".join(projects)
            elif name == "default_project":
                if str(value) in UNLIMITED_WORDS:
                    out[name] = "*"
                else:
                    self._check_project(str(value))
                    out[name] = str(value)
        projects = csv_items(out.get("projects", base.projects if base else "*"))
        if "default_project" in given and given["default_project"] is not None:
            if out["default_project"] not in projects:
                # Appended, as flux-accounting's add-user stores it (`-P a,b --default-project
                # c` is a,b,*,c): scripts compare the text.
                projects.append(out["default_project"])
                out["projects"] = ",".join(projects)
        elif "projects" in out and not partial and "projects" in given:
            out["default_project"] = projects[0] if projects else "*"
        if "qos" in out or "default_qos" in out:
            qos_list = csv_items(out.get("qos", base.qos if base else ""))
            default_qos = out.get("default_qos", base.default_qos if base else "")
            if default_qos and default_qos not in qos_list:
                raise InvalidValue(
                    f"default QOS {default_qos} is not in the association's QOS list "
                    f"{','.join(qos_list) or '(none)'}"
                )
        return out

    def _qos_field(self, name: str, value: str) -> str:
        """An association's QOS list or default QOS: each a QOS of the ledger; -1 or
        `unlimited` (or '') clears it."""
        if value.strip() in UNLIMITED_WORDS:
            return ""
        names = csv_items(value) if name == "qos" else [value.strip()] if value.strip() else []
        for qos in names:
            if qos not in self.state.qos:
                raise NotFound(f"QOS {qos} not found")
        return ",".join(dict.fromkeys(names))

    def _check_queue(self, queue: str) -> None:
        if queue not in self.state.queues:
            raise NotFound(f"queue {queue} does not exist in queue_table")

    def _check_project(self, project: str) -> None:
        if project not in self.state.projects:
            raise NotFound(f"project {project} does not exist in project_table")

    # --- queues and projects ---------------------------------------------------------------------
    def add_queue(
        self,
        stamp: Stamp,
        queue: str,
        given: dict[str, int | None],
        billing_weights: str | None = None,
        partition: dict[str, int | str | None] | None = None,
    ) -> None:
        """`billing_weights`: Slurm's TRESBillingWeights for the jobs of this queue;
        `partition`: its PARTITION_DEFAULTS fields (None: not given)."""
        _check_name("queue", queue)
        if queue in self.state.queues:
            raise AlreadyExists(f"queue {queue} already exists in queue_table")
        fields: dict[str, int | str] = dict(QUEUE_DEFAULTS)
        for name, value in given.items():
            if value is None:
                continue
            fields[name] = _check_queue_field(name, value)
        weights = _check_billing_weights(billing_weights)
        if weights:  # a queue without weights records what flux-accounting's queues record
            fields[BILLING_WEIGHTS] = weights
        # Likewise the partition fields: recorded only when they say something.
        for name, setting in _partition_fields(partition).items():
            if setting != PARTITION_DEFAULTS[name]:
                fields[name] = setting
        self.trigger_event(ev.QueueAdded, queue=queue, fields=fields, **stamp.kwargs())

    def edit_queue(
        self,
        stamp: Stamp,
        queue: str,
        given: dict[str, int | None],
        billing_weights: str | None = None,
        partition: dict[str, int | str | None] | None = None,
    ) -> bool:
        """`billing_weights` "" clears the queue's weights (billing = CPUs again); so does
        `total_tres` "" its TRES totals."""
        current = self.state.queues.get(queue)
        if current is None:
            raise NotFound(f"queue {queue} not found in queue_table")
        wanted: dict[str, int | str] = {}
        if billing_weights is not None:
            wanted[BILLING_WEIGHTS] = _check_billing_weights(billing_weights)
        wanted.update(_partition_fields(partition))
        for name, value in given.items():
            if value is None:
                continue
            if name != "priority" and value == -1:
                wanted[name] = QUEUE_DEFAULTS[name]
                continue
            wanted[name] = _check_queue_field(name, value)
        changes = _diff(current, wanted)
        if changes:
            self.trigger_event(ev.QueueEdited, queue=queue, changes=changes, **stamp.kwargs())
        return bool(changes)

    def delete_queue(self, stamp: Stamp, queue: str) -> list[str]:
        """Returns the associations that still list the queue (the caller warns about them)."""
        if queue not in self.state.queues:
            raise NotFound(f"queue {queue} not found in queue_table")
        users = [
            f"{a.username}/{a.bank}"
            for a in self.state.all_associations()
            if queue in csv_items(a.queues)
        ]
        self.trigger_event(ev.QueueRemoved, queue=queue, **stamp.kwargs())
        return sorted(users)

    # --- QOS (Slurm's) ---------------------------------------------------------------------------
    def add_qos(self, stamp: Stamp, qos: str, given: dict[str, Any]) -> None:
        """A QOS with `given`'s priority, usage_factor, flags and description (each None:
        Slurm's default)."""
        _check_name("QOS", qos)
        if qos in self.state.qos:
            raise AlreadyExists(f"QOS {qos} already exists")
        fields = dict(QOS_DEFAULTS, **_qos_fields(given))
        self.trigger_event(ev.QosAdded, qos=qos, fields=fields, **stamp.kwargs())

    def edit_qos(self, stamp: Stamp, qos: str, given: dict[str, Any]) -> bool:
        current = self._qos(qos)
        changes = _diff(current, _qos_fields(given))
        if changes:
            self.trigger_event(ev.QosEdited, qos=qos, changes=changes, **stamp.kwargs())
        return bool(changes)

    def delete_qos(self, stamp: Stamp, qos: str) -> None:
        """Refused while an association lists it: its jobs and defaults would name nothing."""
        self._qos(qos)
        users = sorted(
            f"{a.username}/{a.bank}"
            for a in self.state.all_associations()
            if qos in csv_items(a.qos) or a.default_qos == qos
        )
        if users:
            shown = ", ".join(users[:5]) + (f" and {len(users) - 5} more" if len(users) > 5 else "")
            raise InvalidValue(f"QOS {qos} is used by associations {shown}: edit them first")
        self.trigger_event(ev.QosRemoved, qos=qos, **stamp.kwargs())

    def _qos(self, qos: str) -> Any:
        found = self.state.qos.get(qos)
        if found is None:
            raise NotFound(f"QOS {qos} not found")
        return found

    def add_project(self, stamp: Stamp, project: str, project_id: int | None = None) -> None:
        """`project_id` keeps an imported project's id (default: the next free one)."""
        _check_name("project", project)
        if project in self.state.projects:
            raise AlreadyExists(f"project {project} already exists in project_table")
        if project_id is not None:
            _check_id(
                "project_id",
                project_id,
                {p.project_id: p.project for p in self.state.projects.values()},
            )
        self.trigger_event(
            ev.ProjectAdded,
            project=project,
            project_id=self.state.next_project_id if project_id is None else project_id,
            **stamp.kwargs(),
        )

    def delete_project(self, stamp: Stamp, project: str) -> list[str]:
        if project not in self.state.projects:
            raise NotFound(f"project {project} not found in project_table")
        if project == "*":
            raise InvalidValue("project * cannot be deleted: every association may use it")
        users = [
            f"{a.username}/{a.bank}"
            for a in self.state.all_associations()
            if project in csv_items(a.projects)
        ]
        self.trigger_event(ev.ProjectRemoved, project=project, **stamp.kwargs())
        return sorted(users)

    # --- factors and config ----------------------------------------------------------------------
    def edit_factor(self, stamp: Stamp, factor: str, weight: int) -> bool:
        """A weight of the site's family: flux-accounting's four factors, or on a Slurm site
        (fair-tree, classic) Slurm's PriorityWeight* (uint32: a negative weight is refused)."""
        defaults = factor_defaults(self.state.slurm_site)
        if factor not in defaults:
            raise InvalidValue(
                f"factor {factor} not found in priority_factor_weight_table; available factors are "
                f"{','.join(defaults)}"
            )
        if self.state.slurm_site:
            if weight < 0:
                raise InvalidValue(
                    f"invalid weight: {weight} (Slurm's PriorityWeight{factor.capitalize()} "
                    "must be >= 0)"
                )
            weight = check_int("weight", weight, 0, bounds.SLURM_WEIGHT_MAX)
        else:
            weight = check_int("weight", weight, bounds.FACTOR_WEIGHT_MIN, bounds.FACTOR_WEIGHT_MAX)
        # A Slurm weight not recorded yet is at its default (a Flux site records all four).
        old = self.state.factors.get(factor, defaults[factor] if self.state.slurm_site else None)
        if old == weight:
            return False
        self.trigger_event(
            ev.FactorWeightChanged, factor=factor, old=old, new=int(weight), **stamp.kwargs()
        )
        return True

    def reset_factors(self, stamp: Stamp) -> int:
        defaults = factor_defaults(self.state.slurm_site)
        return sum(self.edit_factor(stamp, f, w) for f, w in defaults.items())

    def add_config(self, stamp: Stamp, key: str, value: str) -> None:
        """add-config: a key of the site's own (the core keys are always there)."""
        bounds.check_name("config key", key)
        if key != key.strip() or "=" in key:
            raise InvalidValue(f"invalid config key: {bounds.printable(repr(key))}")
        if key in self.state.config:
            # SQLite's words in flux-accounting (its t1093 greps them), then the key.
            raise AlreadyExists(
                f"UNIQUE constraint failed: config_table.key (key {key} already exists)"
            )
        checked = key in EDITABLE_CONFIG_KEYS  # a core key, or one of ours such as timezone
        text = normalise_config_value(key, value) if checked else _check_value(value)
        self.trigger_event(ev.ConfigChanged, key=key, old=None, new=text, **stamp.kwargs())

    def delete_config(self, stamp: Stamp, key: str) -> None:
        if key in CONFIG_KEYS:
            raise InvalidValue(  # flux-accounting's words (its t1093 greps them), then why
                "key-value pair is not allowed to be removed from config_table "
                f"({key} is a core config key)"
            )
        if key not in self.state.config:
            raise NotFound(f"key {bounds.printable(key)} not found in config_table")
        self.trigger_event(ev.ConfigRemoved, key=key, old=self.state.config[key], **stamp.kwargs())

    def edit_config(self, stamp: Stamp, pairs: list[tuple[str, str]]) -> int:
        # Validate every pair before recording any, so a bad pair leaves nothing half-written.
        # A key add-config added holds free text; the core keys are checked.
        normalised = [
            (key, _check_value(value))
            if key not in EDITABLE_CONFIG_KEYS and key in self.state.config
            else (key, normalise_config_value(key, value))
            for key, value in pairs
        ]
        merged = dict(self.state.config, **dict(normalised))
        check_decay_config(merged)
        self._check_policy(merged)
        recorded = 0
        for key, value in normalised:
            # A key of fairledger's own not yet recorded holds its default: setting that is no
            # change, and history shows the change from it.
            old = self.state.config.get(key, CONFIG_DEFAULTS.get(key))
            if key == USAGE_MODEL_KEY and old is None:
                old = default_usage_model(self.state.fairshare_algorithm)
            if old != value:
                self.trigger_event(ev.ConfigChanged, key=key, old=old, new=value, **stamp.kwargs())
                recorded += 1
        return recorded

    def _check_policy(self, config: dict[str, str]) -> None:
        """A switch to fair-tree or classic: the tree must be one Slurm's can hold (names, and no
        Fairshare=parent on the root). Users beside sub-banks suit every algorithm: the
        weighted walk weighs a bank's users and sub-banks as siblings (ledger/fairshare.py)."""
        if config.get(ALGORITHM_KEY, WEIGHTED_WALK) == WEIGHTED_WALK:
            return
        for bank in self.state.banks.values():
            _check_slurm_name("bank", bank.bank, is_root=not bank.parent_bank)
            _check_root_shares(bank.bank, bank.shares, is_root=not bank.parent_bank)
        for username in self.state.associations:
            _check_slurm_name("user", username)

    # --- repair ----------------------------------------------------------------------------------
    def neutralize(
        self,
        stamp: Stamp,
        position: int,
        site_version: int | None,
        jobs: list[list[str]],
        summary: str,
    ) -> None:
        """Set aside the event at log `position` (its read models cannot apply it); which
        events qualify is the doctor's to say, from the log (projections.doctor)."""
        if not stamp.reason.strip():
            raise InvalidValue("a neutralization needs a reason (--reason)")
        self.trigger_event(
            ev.EventNeutralized,
            position=position,
            site_version=site_version,
            jobs=jobs,
            summary=summary,
            **stamp.kwargs(),
        )

    # --- usage -----------------------------------------------------------------------------------
    def clear_usage(self, stamp: Stamp, bank: str, ignore_older_than: float) -> None:
        self._bank(bank)
        in_subtree = {b.bank for b in self.state.subtree(bank)}
        pairs = sorted(
            [a.username, a.bank] for a in self.state.all_associations() if a.bank in in_subtree
        )
        self.trigger_event(
            ev.UsageCleared,
            bank=bank,
            associations=pairs,
            ignore_older_than=float(ignore_older_than),
            **stamp.kwargs(),
        )

    def import_usage_balance(
        self, stamp: Stamp, entries: list[list[Any]], shown: list[list[Any]]
    ) -> None:
        """An opening balance (ledger.import_events.UsageBalanceImported): usage another
        system had accumulated, as raw charges at given times, and the values it showed."""
        for username, bank, *_rest in [*entries, *shown]:
            if self.state.association(username, bank) is None:
                raise NotFound(f"user {username} not found in bank {bank}")
        for _username, _bank, at, charge in entries:
            if not (isinstance(at, int | float) and isinstance(charge, int | float)):
                raise InvalidValue(f"invalid usage balance entry: at {at!r}, charge {charge!r}")
            if charge < 0:
                raise InvalidValue(f"invalid usage balance charge: {charge} (must be >= 0)")
            bounds.check_time("usage balance time", at)
            check_float("usage balance charge", charge, 0.0, _BALANCE_CHARGE_MAX)
        for _username, _bank, usage, fairshare in shown:
            check_float("usage balance job_usage", usage, 0.0, _BALANCE_CHARGE_MAX)
            check_float("usage balance fairshare", fairshare, 0.0, 1.0)
        if entries or shown:
            self.trigger_event(
                iev.UsageBalanceImported, entries=entries, shown=shown, **stamp.kwargs()
            )

    def may_import(self, sha256: str, command: str, into: str = "an empty ledger") -> bool:
        """Whether an import of the source with this sha256 is to be applied: False when it
        was imported already (meanwhile, by another process); AlreadyExists when the ledger
        holds a site, since an import brings a whole site into an empty ledger."""
        if sha256 in self.state.imports:
            return False
        if self.state.banks or self.state.associations:
            raise site_already_held(self.state, command, into)
        return True

    def mark_imported(
        self,
        stamp: Stamp,
        file: str,
        sha256: str,
        schema: str,
        counts: dict[str, int],
        fixes: list[str],
        notes: list[str],
    ) -> None:
        if sha256 in self.state.imports:
            raise AlreadyExists(f"{file} was already imported (sha256 {sha256[:12]})")
        self.trigger_event(
            iev.SiteImported,
            file=file,
            sha256=sha256,
            schema=schema,
            counts=counts,
            fixes=fixes,
            notes=notes,
            **stamp.kwargs(),
        )

    def mark_usage_updated(self, stamp: Stamp) -> None:
        self.trigger_event(ev.UsageUpdated, **stamp.kwargs())

    def mark_fairshare_updated(self, stamp: Stamp) -> None:
        self.trigger_event(ev.FairshareUpdated, **stamp.kwargs())


# --- validation helpers shared by the commands (the limits are ledger.bounds') ---
_BALANCE_CHARGE_MAX = bounds.ASSOCIATION_CHARGE_UNITS_MAX / bounds.CHARGE_UNITS


def _check_name(kind: str, name: str) -> None:
    bounds.check_name(kind, name)
    if name != name.strip() or "," in name:
        raise InvalidValue(f"invalid {kind} name: {name!r}")


def _check_cutoff(value: float) -> float:
    """An ignore_older_than: a time, kept to whole seconds as flux-accounting's bigint is."""
    return float(int(bounds.check_time("ignore_older_than", value)))


def _check_fairshare(value: float | str) -> float:
    """A fair-share is rank/N: in [0, 1] (flux-accounting takes any float)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidValue(
            f"invalid fairshare: {bounds.printable(repr(value))} (must be a number)"
        ) from None
    if not 0.0 <= number <= 1.0:
        raise InvalidValue(f"invalid fairshare: {value} (must be between 0 and 1)")
    return number


def _check_value(value: str) -> str:
    """A config value add-config stores as given: one printable line."""
    text = str(value).strip()
    bounds.check_text("config value", text)
    return text


def _one_of(key: str, text: str, choices: tuple[str, ...]) -> str:
    """A config value that names one of `choices`, in any case; stored in lower case."""
    if text.lower() not in choices:
        raise InvalidValue(
            f"invalid {key}: {bounds.printable(repr(text))} (must be one of {', '.join(choices)})"
        )
    return text.lower()


def site_already_held(
    state: SiteState, command: str, into: str = "an empty ledger"
) -> AlreadyExists:
    """The refusal of an import into a ledger that already holds a site."""
    root = state.root_bank()
    return AlreadyExists(
        f"the ledger already holds a site (root bank {root.bank if root else '?'}); "
        f"{command} brings a site into {into}"
    )


def _check_root_shares(bank: str, shares: int, is_root: bool) -> None:
    """Under fair-tree or classic a share value of PARENT is Slurm's Fairshare=parent, which
    the root (the cluster association) cannot take: it has no parent to take shares from."""
    if is_root and shares == PARENT:
        raise InvalidValue(
            f"invalid shares for the root bank {bank}: {shares} is Fairshare=parent, and the "
            "root has no parent to take its shares from"
        )


def _check_slurm_name(kind: str, name: str, is_root: bool = False) -> None:
    """Slurm's association lineage is a path (`/acct/0-user/`) and its cluster association is
    `root`: under fair-tree or classic a name holds no `/`, and only the root bank is `root`."""
    from ledger.slurm_shares import ROOT  # numpy comes with it: Slurm sites only

    if "/" in name:
        raise InvalidValue(f"invalid {kind} name for Slurm's fair-share: {name!r} (contains '/')")
    if kind == "bank" and name == ROOT and not is_root:
        raise InvalidValue(
            f"invalid bank name for Slurm's fair-share: {name!r} names the root (Slurm's "
            "cluster association) and this bank is not the root bank"
        )


def _qos_fields(given: dict[str, Any]) -> dict[str, Any]:
    """The QOS fields given (None: not given), validated and in their stored form."""
    out: dict[str, Any] = {}
    if given.get("priority") is not None:
        out["priority"] = check_int("QOS priority", given["priority"], 0, bounds.QOS_PRIORITY_MAX)
    if given.get("usage_factor") is not None:
        value = given["usage_factor"]
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise InvalidValue(f"invalid usage factor: {value} (must be >= 0)")
        out["usage_factor"] = check_float("usage factor", value, 0.0, bounds.USAGE_FACTOR_MAX)
    if given.get("flags") is not None:
        out["flags"] = normalise_qos_flags(str(given["flags"]))
    if given.get("description") is not None:
        out["description"] = check_text("QOS description", str(given["description"]).strip())
    return out


def normalise_qos_flags(text: str) -> str:
    """Slurm's QOS flag names in any case, stored as Slurm spells them, each once, in
    QOS_FLAGS' order; an unknown flag is refused naming it."""
    known = {flag.lower(): flag for flag in QOS_FLAGS}
    given = csv_items(text)
    for flag in given:
        if flag.lower() not in known:
            raise InvalidValue(
                f"invalid QOS flag: {bounds.printable(repr(flag))} (known: {', '.join(QOS_FLAGS)})"
            )
    wanted = {known[flag.lower()] for flag in given}
    return ",".join(flag for flag in QOS_FLAGS if flag in wanted)


def factor_defaults(slurm_site: bool) -> dict[str, int]:
    """The factors a site weighs its jobs' priority by, with their defaults."""
    return SLURM_FACTOR_DEFAULTS if slurm_site else FACTOR_DEFAULTS


def _partition_fields(given: dict[str, int | str | None] | None) -> dict[str, int | str]:
    """The partition fields given (None: not given), validated and in their stored form."""
    from ledger.slurm_priority import PART_PRIORITY_MAX, UINT32_MAX

    out: dict[str, int | str] = {}
    for name, value in (given or {}).items():
        if value is None:
            continue
        if name not in PARTITION_DEFAULTS:
            raise InvalidValue(f"unknown partition field {name!r}")
        if name == "total_tres":
            out[name] = _check_tres_totals(str(value))
            continue
        label = name.replace("_", "-")
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidValue(f"invalid {label}: {value!r} (must be an integer)")
        high = PART_PRIORITY_MAX if name.startswith("priority_") else UINT32_MAX
        if not 0 <= value <= high:
            raise InvalidValue(f"invalid {label}: {value} (must be 0..{high})")
        out[name] = value
    return out


def _check_tres_totals(text: str) -> str:
    """`mem=256000,gres/gpu=8`: TRES name=count pairs (counts whole and >= 0), stored with the
    names keyed as the priority keys them; "" clears."""
    from ledger.slurm_priority import tres_key

    check_text("TRES totals", text.strip())
    pairs: dict[str, int] = {}
    for item in csv_items(text):
        name, sep, count = item.partition("=")
        key = tres_key(name) if sep and name.strip() else ""
        if not key or not count.strip().isdigit():
            raise InvalidValue(
                f"invalid TRES total {bounds.printable(repr(item))} "
                "(use e.g. mem=256000,gres/gpu=8)"
            )
        if key in ("node", "cpu"):
            raise InvalidValue(
                f"invalid TRES total {bounds.printable(repr(item))}: a queue's {key} count is "
                f"--total-{key}s"
            )
        pairs[key] = check_int(f"TRES total {key}", int(count), 0, 2**63 - 1)
    return ",".join(f"{k}={v}" for k, v in pairs.items())


def _tres_weights_value(text: str) -> str:
    from ledger.slurm_priority import parse_tres_weights

    check_text(TRES_WEIGHTS_KEY, text)
    try:
        parse_tres_weights(text)
    except InvalidValue as err:
        raise InvalidValue(f"invalid {TRES_WEIGHTS_KEY}: {err}") from None
    return text


def _max_age_value(text: str) -> str:
    """PriorityMaxAge as a duration (`7d`, `12h`, seconds), stored in seconds, at most Slurm's
    uint32 (import-slurm --conf converts slurm.conf's `7-0`)."""
    from ledger.slurm_priority import UINT32_MAX

    seconds = parse_duration(text)
    if not seconds.is_integer() or not 0 <= seconds <= UINT32_MAX:
        raise InvalidValue(f"invalid {MAX_AGE_KEY}: {text} (whole seconds, 0..{UINT32_MAX})")
    return str(int(seconds))


def _favor_small_value(text: str) -> str:
    word = text.upper()
    if word in ("YES", "TRUE", "1"):
        return "YES"
    if word in ("NO", "FALSE", "0"):
        return "NO"
    raise InvalidValue(
        f"invalid {FAVOR_SMALL_KEY}: {bounds.printable(repr(text))} (must be YES or NO)"
    )


def _count_value(key: str) -> Any:
    def check(text: str) -> str:
        if not text.isdigit():
            raise InvalidValue(
                f"invalid {key}: {bounds.printable(repr(text))} (must be a whole number >= 0)"
            )
        return str(check_int(key, int(text), 0, bounds.SLURM_WEIGHT_MAX))

    return check


_SLURM_PRIORITY_KEYS = {
    TRES_WEIGHTS_KEY: _tres_weights_value,
    MAX_AGE_KEY: _max_age_value,
    FAVOR_SMALL_KEY: _favor_small_value,
    CLUSTER_NODES_KEY: _count_value(CLUSTER_NODES_KEY),
    CLUSTER_CPUS_KEY: _count_value(CLUSTER_CPUS_KEY),
}


def _check_billing_weights(text: str | None) -> str:
    """TRESBillingWeights as stored: the text given, once ledger.billing can read it."""
    if text is None or not text.strip():
        return ""
    check_text("billing weights", text.strip())
    parse_billing_weights(text)
    return text.strip()


def _check_shares(shares: int) -> None:
    if shares < 0:
        raise InvalidValue(f"invalid shares: {shares} (shares must be >= 0)")
    check_int("shares", shares, 0, bounds.SHARES_MAX)


def _check_non_negative(name: str, value: int, high: int = bounds.LIMIT_MAX) -> None:
    if value < 0:
        raise InvalidValue(
            f"invalid {name}: {value} (value must be a non-negative integer or -1 to reset to "
            "default)"
        )
    check_int(name, value, 0, high)


def _check_queue_field(name: str, value: int) -> int:
    if name == "priority":  # a negative priority is how a site ranks a queue last
        return check_int(name, value, bounds.PRIORITY_MIN, bounds.PRIORITY_MAX)
    _check_non_negative(name, value)
    return int(value)


def _check_bank_priority(priority: float) -> float:
    return check_float("priority", priority, bounds.PRIORITY_MIN, bounds.PRIORITY_MAX)


def _check_id(name: str, value: int, taken: dict[int, str]) -> None:
    if value < 1:
        raise InvalidValue(f"invalid {name}: {value} (must be >= 1)")
    check_int(name, value, 1, bounds.ID_MAX)
    if value in taken:
        raise AlreadyExists(f"{name} {value} is already used by {taken[value]}")


def _diff(obj: Any, wanted: dict[str, Any]) -> dict[str, list[Any]]:
    return {k: [getattr(obj, k), v] for k, v in wanted.items() if getattr(obj, k) != v}


def default_config(
    half_life: float,
    reset_period: float | str,
    decay_factor: float,
    fairshare_algorithm: str = WEIGHTED_WALK,
) -> dict[str, str]:
    """create-db's config. `reset_period` is seconds or one of Slurm's reset names; a
    fair-share algorithm other than the default is recorded with the rest."""
    config = {
        "priority_usage_reset_period": normalise_config_value(RESET_PERIOD_KEY, str(reset_period))
        if isinstance(reset_period, str)
        else format_seconds(reset_period),
        "priority_decay_half_life": format_seconds(half_life),
        "decay_factor": str(decay_factor),
        "node_weight": "1.0",
        "core_weight": "0.0",
        "gpu_weight": "0.0",
        "deny_unknown_queues": "false",
    }
    if fairshare_algorithm != WEIGHTED_WALK:
        config[ALGORITHM_KEY] = normalise_config_value(ALGORITHM_KEY, fairshare_algorithm)
    check_decay_config(config)
    return config


def normalise_config_value(key: str, value: str) -> str:
    """The stored text of a config value, validated the way flux-accounting's edit-config does."""
    if key not in EDITABLE_CONFIG_KEYS:
        raise NotFound(f"key {bounds.printable(key)} not found in config_table")
    text = str(value).strip()
    if key == TIMEZONE_KEY:
        return zone_named(text).key  # an IANA name; a bad one is refused before it is recorded
    if key in ("node_weight", "core_weight", "gpu_weight"):
        try:
            number = float(text)
        except ValueError:
            raise InvalidValue(
                f"invalid {key}: {bounds.printable(repr(text))} (must be a number)"
            ) from None
        if number < 0:
            raise InvalidValue(f"invalid {key}: {text} (must be >= 0)")
        return str(check_float(key, number, 0.0, bounds.CHARGE_WEIGHT_MAX))
    if key == ALGORITHM_KEY:
        return _one_of(key, text, ALGORITHMS)
    if key == USAGE_MODEL_KEY:
        return _one_of(key, text, USAGE_MODELS)
    if key == DAMPENING_KEY:
        if not text.isdigit() or not 1 <= int(text) <= DAMPENING_MAX:
            raise InvalidValue(
                f"invalid fairshare_dampening_factor: {bounds.printable(repr(text))} "
                f"(must be an integer from 1 to {DAMPENING_MAX})"
            )
        return str(int(text))
    if key == PRIORITY_FLAGS_KEY:
        flags = [flag.upper() for flag in csv_items(text)]
        for flag in flags:
            if flag in ALGORITHM_FLAGS:
                raise InvalidValue(
                    f"invalid priority_flags: {flag} is chosen with fairshare_algorithm "
                    f"({', '.join(ALGORITHMS)})"
                )
            if flag not in PRIORITY_FLAGS:
                raise InvalidValue(
                    f"invalid priority_flags: unknown flag {bounds.printable(repr(flag))} "
                    f"(known: {', '.join(PRIORITY_FLAGS)})"
                )
        return ",".join(dict.fromkeys(flags))
    if key == RESET_PERIOD_KEY and text.upper() in RESET_NAMES:
        return text.upper()
    if key in _SLURM_PRIORITY_KEYS:
        return _SLURM_PRIORITY_KEYS[key](text)
    if key in ("priority_usage_reset_period", "priority_decay_half_life"):
        seconds = parse_duration(text)
        if key == HALF_LIFE_KEY and seconds == 0:
            return "0"  # no decay: the continuous model only (check_decay_config)
        if seconds <= 0:
            raise InvalidValue(f"invalid {key}: {text} (must be > 0)")
        return format_seconds(seconds)  # the same form create-db stores
    if key == "decay_factor":
        try:
            factor = float(text)
        except ValueError:
            raise InvalidValue(
                f"invalid decay_factor: {bounds.printable(repr(text))} (must be a number)"
            ) from None
        return str(factor)
    if text.lower() not in ("true", "false"):
        raise InvalidValue(
            f"invalid deny_unknown_queues: {bounds.printable(repr(text))} (must be true or false)"
        )
    return text.lower()


def check_decay_config(config: dict[str, str]) -> None:
    factor = float(config["decay_factor"])
    if not 0.0 < factor <= 1.0:
        raise InvalidValue(f"invalid decay_factor: {config['decay_factor']} (must be in (0, 1])")
    half_life = float(config[HALF_LIFE_KEY])
    reset = config[RESET_PERIOD_KEY]
    if half_life == 0 and (usage_model_of(config) == PERIODS or reset not in RESET_NAMES[1:]):
        # Slurm refuses half-life 0 without a reset too ("usage only grows").
        raise InvalidValue(
            "priority_decay_half_life 0 (no decay) needs usage_model continuous and a "
            "priority_usage_reset_period of DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY"
        )
    if half_life < 0:
        raise InvalidValue(f"invalid priority_decay_half_life: {config[HALF_LIFE_KEY]}")
    # Bounded decay: a minimum half-life and at most bounds.PAST_BINS_MAX past bins.
    bounds.check_decay(periods_half_life(config), reset_period_seconds(config), factor)
    if reset in RESET_NAMES and usage_model_of(config) == PERIODS:
        raise InvalidValue(
            f"priority_usage_reset_period {reset} needs usage_model continuous: the periods "
            "model resets after a duration (such as 4w)"
        )
