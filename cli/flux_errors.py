"""flux-accounting's error lines. Its service answers a refused command with `<command>:
<exception type>: <message>`, which its CLI prints (`flux-account: ERROR: view-bank: ValueError:
bank foo not found in bank_table`) and its tests and its admins' scripts grep, type included
(`grep "edit-config: ValueError: key foo not found in config_table"`). fairledger prints the same
words after its own `fairledger: ` for those commands, so the greps still match; its other
commands (Slurm's, the ledger's own) print the message alone."""

from __future__ import annotations

from ledger.errors import AlreadyExists, InvalidValue, LedgerError, NotFound

# The commands flux-accounting's service answers (flux-account.py's func_map), and
# fairshare-emulate, whose own script prints its errors the same way.
FLUX_COMMANDS = frozenset(
    {
        "view-user", "list-users", "add-user", "delete-user", "edit-user", "edit-all-users",
        "view-job-records", "add-bank", "view-bank", "delete-bank", "edit-bank", "list-banks",
        "bank-info", "add-queue", "view-queue", "delete-queue", "edit-queue", "list-queues",
        "add-project", "view-project", "delete-project", "list-projects", "scrub-old-jobs",
        "export-db", "pop-db", "view-factor", "edit-factor", "list-factors", "reset-factors",
        "jobs", "show-usage", "sync-userids", "export-json", "view-usage-report", "clear-usage",
        "add-config", "view-config", "edit-config", "delete-config", "list-configs",
        "fairshare-emulate",
    }
)  # fmt: skip

# flux-accounting refuses a duplicate with sqlite3's IntegrityError (`bank B already exists in
# bank_table`) and everything else it checks with ValueError. Errors of the ledger's own (a
# missing ledger, a database down, a log that fails verification) have no counterpart there.
_BY_CLASS: tuple[tuple[type[LedgerError], str], ...] = (
    (AlreadyExists, "IntegrityError"),
    (NotFound, "ValueError"),
    (InvalidValue, "ValueError"),
)


def flux_prefix(command: str | None, err: LedgerError) -> str:
    """What flux-accounting puts before the message of `err` from `command` ('' for none)."""
    if command not in FLUX_COMMANDS:
        return ""
    name = err.exception_name  # "": an error of the invocation's own (ledger.usecases.session)
    if name is None:
        name = next((n for cls, n in _BY_CLASS if isinstance(err, cls)), None)
    return f"{command}: {name}: " if name else ""
