"""The `flux` command the sharness scripts find first on PATH: `flux account` → fairledger.

`flux account [-p|--path DBPATH] CMD ARGS...` runs `fairledger --db sqlite:///DBPATH CMD ARGS...`
in this process. flux-accounting's commands other than create-db ignore `-p` and talk to the
`flux account-service` started on one database, so a command without `-p` goes to the database
last named by `create-db -p` or `flux account-service -p` (kept in the file FAIRLEDGER_SHIM_STATE,
one per test script). The separate executables that need no running Flux map to their fairledger
commands; everything else that needs a running Flux says so on stderr and fails.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

from tests.flux_sharness.forkserver import SERVER_ENV, call

STATE_ENV = "FAIRLEDGER_SHIM_STATE"
# The runner's: the file the shim notes what a step needed in, and the step being run.
LOG_ENV = "FAIRLEDGER_SHIM_LOG"
STEP_ENV = "FAIRLEDGER_SHIM_STEP"
NEEDS_FLUX = "flux shim: needs a running Flux:"
# A note's kind, as the runner classifies a failed step by it.
KIND_FLUX = "needs-flux"
KIND_TABLES = "fa-tables"
KIND_NONE = "no-equivalent"
KIND_USAGE = "usage-error"
KIND_REFUSED = "refused"
USAGE_ERROR = 2  # click's and argparse's exit code for a malformed command line
# Where a command goes before any database was named; fairledger creates no file there.
UNNAMED_DB = "fairledger-shim-no-database.db"
# flux-accounting's executables fairledger deliberately has no counterpart of, and why.
NO_EQUIVALENT = {
    "account-update-db": "a ledger has no table schema to migrate (events are versioned), and "
    "import-flux-accounting reads every flux-accounting schema version",
}
# A script importing flux needs a broker; one opening flux-accounting's database with sqlite3 or
# its fluxacct package reads tables a fairledger ledger does not have.
_IMPORTS_FLUX = re.compile(r"^\s*(import flux\b|from flux\b)|\bimport flux\b", re.MULTILINE)
_READS_TABLES = re.compile(r"^\s*(import sqlite3|import fluxacct|from fluxacct)", re.MULTILINE)
# flux-accounting's separate executables that are plain commands of fairledger's.
LOCAL_EXECUTABLES = {
    "account-update-usage": "update-usage",
    "account-update-fshare": "update-fshare",
    "account-fairshare-emulate": "fairshare-emulate",
}


def note(kind: str, what: str) -> None:
    """Tell the runner that the step being run needed something fairledger cannot give."""
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.environ.get(STEP_ENV, '0')}\t{kind}\t{what}\n")


def needs_flux(what: str) -> int:
    note(KIND_FLUX, what)
    print(f"{NEEDS_FLUX} {what}", file=sys.stderr)
    return 1


def _python_needs(args: Sequence[str]) -> None:
    """Note what a `flux python` script needs, read from its code (-c) or its file."""
    code = ""
    if len(args) >= 2 and args[0] == "-c":
        code = args[1]
    elif args and not args[0].startswith("-") and os.path.isfile(args[0]):
        with open(args[0], encoding="utf-8", errors="replace") as src:
            code = src.read()
    shown = " ".join(args)[:120]
    if _IMPORTS_FLUX.search(code):
        note(KIND_FLUX, f"flux python {shown}")
    elif _READS_TABLES.search(code):
        note(KIND_TABLES, f"flux python {shown}")


def _remember(db_path: str) -> None:
    state = os.environ.get(STATE_ENV)
    if state:
        with open(state, "w", encoding="utf-8") as out:
            out.write(os.path.abspath(db_path))  # a later step may run in another directory


def _remembered() -> str | None:
    state = os.environ.get(STATE_ENV)
    if not state or not os.path.exists(state):
        return None
    with open(state, encoding="utf-8") as src:
        return src.read().strip() or None


def split_path_option(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take every `-p P`, `--path P` and `--path=P` before the command; the last one wins."""
    rest = list(args)
    path: str | None = None
    while rest:
        head = rest[0]
        if head in ("-p", "--path") and len(rest) > 1:
            path, rest = rest[1], rest[2:]
        elif head.startswith("--path="):
            path, rest = head.split("=", 1)[1], rest[1:]
        elif head.startswith("-p") and len(head) > 2:
            path, rest = head[2:], rest[1:]
        else:
            break
    return path, rest


def take_path_option(args: Sequence[str]) -> tuple[str | None, list[str]]:
    """An executable's `-p/--path` may follow its other options (`account-update-usage -v -p P`)."""
    path: str | None = None
    rest: list[str] = []
    items = list(args)
    while items:
        head = items.pop(0)
        if head in ("-p", "--path") and items:
            path = items.pop(0)
        elif head.startswith("--path="):
            path = head.split("=", 1)[1]
        else:
            rest.append(head)
    return path, rest


def _run_fairledger(db_path: str | None, command: list[str]) -> int:
    code = _fairledger_exit(db_path, command)
    if code == USAGE_ERROR:
        # A command line fairledger cannot parse: an interface difference even inside a step
        # that also needs Flux (whose failure would hide it).
        note(KIND_USAGE, " ".join(command)[:160])
    elif code != 0:
        # A refusal: meant (test_must_fail) or not, which only a reader of the step can tell.
        note(KIND_REFUSED, " ".join(command)[:160])
    return code


def _fairledger_exit(db_path: str | None, command: list[str]) -> int:
    if db_path is None:
        db_path = _remembered()
    if db_path is None:
        # No database named yet: a command that needs none (fairshare-emulate -i) still runs;
        # one that needs one says it has no ledger.
        db_path = UNNAMED_DB
    # As typed: flux-accounting's messages name the path they were given (t1006 greps
    # `unable to open database file foo.db`); the fork server runs in the caller's directory.
    args = ["--db", f"sqlite:///{db_path}", *command]
    server = os.environ.get(SERVER_ENV)
    if server:
        return call(server, args)
    from cli.main import cli

    try:
        cli.main(args=args, prog_name="fairledger")
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        return code if isinstance(code, int) else 1
    return 0


def account(args: Sequence[str]) -> int:
    if os.environ.get("FLUX_HANDLE_ROLEMASK"):
        # A guest's handle to the broker: the access check the step tests is Flux's (the
        # service's owner-only endpoints); a ledger's are its database's roles.
        note(KIND_FLUX, "flux account as a guest (FLUX_HANDLE_ROLEMASK)")
    path, command = split_path_option(args)
    if command and command[0] == "create-db" and path is not None:
        _remember(path)
    if command and command[0] == "jobs":
        # Live jobs come from Flux's job-list.
        return needs_flux("flux account jobs")
    return _run_fairledger(path, command)


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: flux COMMAND ...", file=sys.stderr)
        return 1
    name, rest = argv[0], list(argv[1:])
    if name == "version":
        print("commands:    \t\t0.0.0-fairledger-shim")
        return 0
    if name == "python":
        _python_needs(rest)
        os.execv(sys.executable, [sys.executable, *rest])
    if name == "account":
        return account(rest)
    if name == "account-service":
        # The service is Flux's; what a script means by starting it is "use this database".
        path, _ = split_path_option(rest)
        if path is not None:
            _remember(path)
        needs_flux("flux account-service (the shim only remembers its -p)")
        return 0
    if name in LOCAL_EXECUTABLES:
        path, options = take_path_option(rest)
        return _run_fairledger(path, [LOCAL_EXECUTABLES[name], *options])
    if name in NO_EQUIVALENT:
        note(KIND_NONE, f"flux {name}: {NO_EQUIVALENT[name]}")
        print(f"flux shim: no fairledger counterpart: flux {name}", file=sys.stderr)
        return 1
    return needs_flux(f"flux {' '.join(argv)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
