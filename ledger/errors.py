"""The ledger's error types: each carries a one-line message that names the offending value."""


class LedgerError(Exception):
    """A rule of the ledger was broken; the CLI prints the message and exits 1."""

    # One line, unless the error lists its problems one a line (then printed line by line);
    # either way control characters are escaped on output (ledger.bounds.printable).
    multiline = False
    # The exception flux-accounting raises for the same refusal, where its class does not
    # imply it (cli.flux_errors): fairshare-emulate's missing input is a FileNotFoundError;
    # "" for none (an error of the invocation's --db, --now or settings, not of the command).
    exception_name: str | None = None

    def __init__(self, *args: object, exception_name: str | None = None) -> None:
        super().__init__(*args)
        if exception_name is not None:
            self.exception_name = exception_name


class NotFound(LedgerError):
    pass


class AlreadyExists(LedgerError):
    pass


class InvalidValue(LedgerError):
    pass


class ProblemList(InvalidValue):
    """Several refused rows (pop-db, an import): a heading line, then one line each."""

    multiline = True


class OutOfRange(InvalidValue):
    """A well-formed value beyond what the ledger can hold (ledger.bounds): refused with exit 1
    even where a malformed value of the same parameter is click's usage error (exit 2)."""


class ClockWentBackwards(LedgerError):
    pass


class LedgerMissing(LedgerError):
    pass


class ConcurrentUpdate(LedgerError):
    """Another writer kept winning the race for the same objects; nothing of ours was written."""


class WritersBusy(LedgerError):
    """Another writer holds the writers' lock, and the write asked not to wait for it: nothing
    was written. Its caller does something else meanwhile and tries again (an ingest goes on
    validating its input); it is never the command's answer."""


class Unprojectable(LedgerError):
    """A change the read models could not hold: refused before it reached the log."""


class TamperedLog(LedgerError):
    """The event log or its read models fail verification: the message names the first break."""


class StoreUnavailable(LedgerError):
    """The database could not be reached (refused, timed out, unknown role); nothing written."""


class PermissionDenied(LedgerError):
    """The database role may not make this kind of change."""


class WriteFailed(LedgerError):
    """The store refused a write (a full disk, a lost connection): the transaction was rolled
    back whole, so nothing of it was recorded."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"{problem}; nothing recorded")
        self.problem = problem


class NoScratchSpace(LedgerError):
    """A temporary file (a long listing's lines, verify's rebuild) could not be written: a full
    or unusable TMPDIR. Nothing of the ledger was changed."""


class Interrupted(LedgerError):
    """A command of several transactions stopped after some of them committed: the message
    says how far it got and how to finish."""
